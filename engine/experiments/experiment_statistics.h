// SPDX-License-Identifier: GPL-3.0-or-later
// The statistics an experiment reports (docs/EXPERIMENTS.md "Statistics"): a mean with its
// Student-t confidence interval over replicates, the paired difference of two cells with its
// interval, and binomial intervals for a single run's exact-match rate. Plain C++ (no LibTorch),
// small cited formulas; tests/engine/experiment_statistics_test.cpp checks them against SciPy.
#pragma once

#include <cstdint>
#include <vector>

namespace ql::experiments {

// The regularized incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1, by the continued
// fraction of DLMF 8.17.22 evaluated with the modified Lentz method (Numerical Recipes 3rd ed.
// §6.4, "betacf"). std::invalid_argument outside the domain.
double regularized_incomplete_beta(double a, double b, double x);

// Student's t distribution with `df` > 0 degrees of freedom: P(T <= t).
double student_t_cdf(double t, double df);
// The quantile t with P(T <= t) = p, 0 < p < 1 (bisection on student_t_cdf to 1e-12 relative).
double student_t_quantile(double p, double df);
// The standard normal quantile (bisection on 0.5 erfc(-x / sqrt 2)).
double normal_quantile(double p);
// The x with I_x(a, b) = p (the Beta(a, b) quantile), by bisection.
double beta_quantile(double p, double a, double b);

struct Interval {
    double low = 0, high = 0;
};

// A mean over replicates and its two-sided `confidence` interval: mean ± t_{(1+c)/2, n-1} · s / √n
// with s the sample standard deviation (n - 1 in the denominator). n = 1: the interval is NaN
// (one replicate says nothing about its spread). std::invalid_argument for no values.
struct MeanInterval {
    double mean = 0;
    double sd = 0;  // sample standard deviation (NaN for n = 1)
    Interval ci;
    int64_t n = 0;
};
MeanInterval mean_interval(const std::vector<double>& values, double confidence = 0.95);

// The paired difference a_i − b_i (the same replicate seed on both sides, so calibration samples
// and data order cancel out) with its t interval. a and b must have the same length.
MeanInterval paired_difference(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);

// Binomial intervals for `successes` of `trials` (e.g. exact matches of 1500 problems):
// Wilson's score interval (Wilson 1927; no continuity correction, as scipy.stats.binomtest's
// proportion_ci(method="wilson")) and the exact Clopper-Pearson interval (Clopper & Pearson
// 1934: Beta quantiles, as proportion_ci(method="exact")).
Interval wilson_interval(int64_t successes, int64_t trials, double confidence = 0.95);
Interval clopper_pearson_interval(int64_t successes, int64_t trials, double confidence = 0.95);

// The difference p1 − p2 of two independent proportions with Newcombe's hybrid score interval
// (Newcombe 1998, "Interval estimation for the difference between independent proportions",
// method 10), built from the two Wilson intervals: what an experiment reports for a comparison
// of single runs. Conservative for runs scored on the same problems (it ignores the pairing).
Interval newcombe_difference_interval(int64_t successes1, int64_t trials1, int64_t successes2, int64_t trials2,
                                      double confidence = 0.95);

}  // namespace ql::experiments
