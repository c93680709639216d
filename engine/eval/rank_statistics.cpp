// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/rank_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/core/errors.h"

namespace ql {

std::vector<double> average_ranks(const std::vector<double>& values) {
    const size_t n = values.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
    std::vector<double> ranks(n);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && values[order[j]] == values[order[i]]) ++j;
        // Positions i..j-1 (0-based) share the mean of ranks i+1..j.
        const double rank = 0.5 * static_cast<double>(i + 1 + j);
        for (size_t k = i; k < j; ++k) ranks[order[k]] = rank;
        i = j;
    }
    return ranks;
}

double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size()) throw UserError("spearman: " + std::to_string(x.size()) + " and " + std::to_string(y.size()) + " values");
    if (x.size() < 2) throw UserError("spearman: needs at least 2 pairs");
    const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
    const double n = static_cast<double>(x.size());
    const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n, my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < rx.size(); ++i) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    if (sxx == 0 || syy == 0) return std::nan("");
    return sxy / std::sqrt(sxx * syy);
}

double percentile(std::vector<double> values, double q) {
    if (values.empty()) throw UserError("percentile of no values");
    if (!(q >= 0 && q <= 100)) throw UserError("percentile: q must be in [0, 100]");
    std::sort(values.begin(), values.end());
    const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
}

}  // namespace ql
