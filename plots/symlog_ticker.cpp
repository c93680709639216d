// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/symlog_ticker.h"

#include <algorithm>
#include <cmath>

namespace ql {

SymLogTransform::SymLogTransform(double linearThreshold)
    : m_c(linearThreshold > 0 && std::isfinite(linearThreshold) ? linearThreshold : 1.0) {}

double SymLogTransform::forward(double x) const {
    return std::copysign(std::log2(1.0 + std::fabs(x) / m_c), x);
}

double SymLogTransform::inverse(double t) const {
    return std::copysign((std::exp2(std::fabs(t)) - 1.0) * m_c, t);
}

QString formatPowerOfTwo(int exponent, bool negative) {
    const QString sign = negative ? QStringLiteral("\u2212") : QString();
    if (exponent >= -3)
        return sign + QString::number(std::ldexp(1.0, exponent), 'g', 12);
    static const QString superscripts[] = {
        QStringLiteral("\u2070"), QStringLiteral("\u00b9"), QStringLiteral("\u00b2"), QStringLiteral("\u00b3"),
        QStringLiteral("\u2074"), QStringLiteral("\u2075"), QStringLiteral("\u2076"), QStringLiteral("\u2077"),
        QStringLiteral("\u2078"), QStringLiteral("\u2079")};
    QString power = QStringLiteral("\u207b");  // superscript minus
    for (QChar digit : QString::number(-exponent)) power += superscripts[digit.digitValue()];
    return sign + QStringLiteral("2") + power;
}

SymLogTicker::SymLogTicker(const SymLogTransform& transform) : m_transform(transform) {}

void SymLogTicker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                            QVector<double>* subTicks, QVector<QString>* tickLabels) {
    ticks.clear();
    if (subTicks) subTicks->clear();
    if (tickLabels) tickLabels->clear();
    const double lo = m_transform.inverse(range.lower);
    const double hi = m_transform.inverse(range.upper);
    const double reach = std::max(std::fabs(lo), std::fabs(hi));
    if (!(reach > 0) || !std::isfinite(reach)) return;

    // Powers of two from the linear threshold (below it the axis is linear) to the range's end.
    const int kLow = static_cast<int>(std::ceil(std::log2(m_transform.linearThreshold())));
    const int kHigh = static_cast<int>(std::floor(std::log2(reach)));
    const int octaves = std::max(1, kHigh - kLow + 1);
    const bool twoSided = lo < 0 && hi > 0;
    const int perSide = std::max(2, twoSided ? tickCount() / 2 : tickCount());
    const int stride = std::max(1, (octaves + perSide - 1) / perSide);

    struct Tick {
        double position;
        QString label;
    };
    QVector<Tick> out;
    if (lo <= 0 && hi >= 0) out.push_back({0.0, QStringLiteral("0")});
    for (int k = kHigh; k >= kLow; --k) {
        // Anchor the stride at the top so the largest power of two is always labelled.
        if ((kHigh - k) % stride != 0) continue;
        const double v = std::ldexp(1.0, k);
        if (v >= lo && v <= hi) out.push_back({m_transform.forward(v), formatPowerOfTwo(k, false)});
        if (-v >= lo && -v <= hi) out.push_back({m_transform.forward(-v), formatPowerOfTwo(k, true)});
    }
    std::sort(out.begin(), out.end(), [](const Tick& a, const Tick& b) { return a.position < b.position; });
    for (const Tick& t : out) {
        ticks.push_back(t.position);
        if (tickLabels) tickLabels->push_back(t.label);
    }
}

}  // namespace ql
