// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/sample_block.h"

#include <QRegularExpression>
#include <QObject>
#include <QStringList>

#include <cmath>
#include <random>

namespace ql {
namespace {

float roundSignificant(double v, int digits) {
    if (v == 0 || !std::isfinite(v)) return static_cast<float>(v);
    const double magnitude = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
    return static_cast<float>(std::round(v * magnitude) / magnitude);
}

// Box-Muller over mt19937: std::normal_distribution differs between standard libraries, and
// screenshots and tests should show the same block everywhere.
class NormalSource {
public:
    explicit NormalSource(uint32_t seed) : m_engine(seed) {}
    double next() {
        const double u1 = (static_cast<double>(m_engine()) + 1.0) / 4294967297.0;
        const double u2 = static_cast<double>(m_engine()) / 4294967296.0;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    }

private:
    std::mt19937 m_engine;
};

}  // namespace

std::vector<float> makeSampleBlock(SampleKind kind, int length, uint32_t seed) {
    std::vector<float> out;
    if (length <= 0) return out;
    NormalSource normal(seed);
    const double sigma = kind == SampleKind::TinyValues ? 1e-3 : 1.0;
    out.reserve(static_cast<size_t>(length));
    for (int i = 0; i < length; ++i) out.push_back(roundSignificant(sigma * normal.next(), 4));
    if (kind == SampleKind::WithOutlier) {
        // One value ~12 sigma out, as activation outliers are: it sets the scale for the block.
        const size_t at = static_cast<size_t>(length) / 3;
        out[at] = roundSignificant((normal.next() < 0 ? -1.0 : 1.0) * (10.0 + 4.0 * std::fabs(normal.next())), 4);
    }
    return out;
}

std::vector<float> parseSampleValues(const QString& text, QString* error) {
    std::vector<float> out;
    const QStringList tokens = text.split(QRegularExpression(QStringLiteral("[\\s,;]+")), Qt::SkipEmptyParts);
    for (const QString& token : tokens) {
        bool ok = false;
        const float v = token.toFloat(&ok);
        if (!ok) {
            if (error) *error = QObject::tr("'%1' is not a number").arg(token);
            return {};
        }
        out.push_back(v);
    }
    if (out.empty() && error) *error = QObject::tr("no numbers found");
    return out;
}

QString sampleKindName(SampleKind kind) {
    switch (kind) {
    case SampleKind::RandomNormal: return QObject::tr("Random normal");
    case SampleKind::WithOutlier: return QObject::tr("With outlier");
    case SampleKind::TinyValues: return QObject::tr("Tiny values");
    }
    return {};
}

}  // namespace ql
