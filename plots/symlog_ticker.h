// SPDX-License-Identifier: GPL-3.0-or-later
// A symmetric-log axis for number lines: low-precision float grids span many octaves (FP8 E4M3
// from 2^-9 to 448), so a linear axis hides everything near zero. Data are transformed with
// SymLogTransform before plotting; the ticker labels the transformed axis in original units.
#pragma once

#include <QString>

#include <qcustomplot.h>

namespace ql {

// t(x) = sign(x) * log2(1 + |x| / c): linear near zero (|x| << c), log2 far from it, and odd, so
// the two halves of a signed grid mirror each other.
class SymLogTransform {
public:
    explicit SymLogTransform(double linearThreshold = 1.0);
    double forward(double x) const;
    double inverse(double t) const;
    double linearThreshold() const { return m_c; }

private:
    double m_c;
};

// "448", "0.5", "2⁻⁹": powers of two below 1/8 are written as powers, which reads better than
// 0.001953125 under a tick.
QString formatPowerOfTwo(int exponent, bool negative);

class SymLogTicker : public QCPAxisTicker {
public:
    explicit SymLogTicker(const SymLogTransform& transform);
    void setTransform(const SymLogTransform& transform) { m_transform = transform; }
    void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision,
                  QVector<double>& ticks, QVector<double>* subTicks, QVector<QString>* tickLabels) override;

private:
    SymLogTransform m_transform;
};

}  // namespace ql
