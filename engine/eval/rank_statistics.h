// SPDX-License-Identifier: GPL-3.0-or-later
// Order statistics of plain vectors for the embedding metrics (docs/DATA.md "Encoder metrics"):
// Spearman's rank correlation as scipy.stats.spearmanr computes it, and percentiles as numpy's
// default ("linear") method. Plain C++.
#pragma once

#include <vector>

namespace ql {

// 1-based ranks, ties given the mean of their ranks (scipy.stats.rankdata method="average").
std::vector<double> average_ranks(const std::vector<double>& values);

// Pearson correlation of the average ranks of x and y (same length >= 2); NaN when either is
// constant (scipy returns nan there too). UserError for lengths that differ or are below 2.
double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

// numpy.percentile(values, q) with the default linear interpolation: the value at rank
// q / 100 * (n - 1) of the sorted values. q in [0, 100]; values not empty.
double percentile(std::vector<double> values, double q);

}  // namespace ql
