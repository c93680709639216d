// SPDX-License-Identifier: GPL-3.0-or-later
// The span of the values a plot shows, for fitting an axis to its data ("reset zoom").
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace ql {

class DataExtent {
public:
    // Widens the span to hold `v`; NaN and infinities are ignored.
    void take(double v) {
        if (!std::isfinite(v)) return;
        m_lo = std::min(m_lo, v);
        m_hi = std::max(m_hi, v);
    }

    bool empty() const { return !std::isfinite(m_lo); }

    // {lower, upper} of an axis showing the span with `padShare` of its width free on each side:
    // [-1, 1] when nothing was taken, [v - 1, v + 1] around a single value v.
    std::pair<double, double> padded(double padShare) const {
        double lo = m_lo, hi = m_hi;
        if (empty()) {
            lo = -1;
            hi = 1;
        }
        if (hi - lo <= 0) {
            lo -= 1;
            hi += 1;
        }
        const double pad = padShare * (hi - lo);
        return {lo - pad, hi + pad};
    }

private:
    double m_lo = std::numeric_limits<double>::infinity();
    double m_hi = -std::numeric_limits<double>::infinity();
};

}  // namespace ql
