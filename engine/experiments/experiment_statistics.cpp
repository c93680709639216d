// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/experiments/experiment_statistics.h"
#include "engine/core/not_a_number.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ql::experiments {
namespace {


// The continued fraction of I_x(a, b) (DLMF 8.17.22), converging for x < (a + 1) / (a + b + 2);
// modified Lentz's method (Numerical Recipes 3rd ed. §5.2 and §6.4).
double beta_continued_fraction(double a, double b, double x) {
    constexpr double kTiny = 1e-300, kEps = 1e-15;
    const double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 10000; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < kTiny) d = kTiny;
        c = 1 + aa / c;
        if (std::fabs(c) < kTiny) c = kTiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < kTiny) d = kTiny;
        c = 1 + aa / c;
        if (std::fabs(c) < kTiny) c = kTiny;
        d = 1 / d;
        const double del = d * c;
        h *= del;
        if (std::fabs(del - 1) < kEps) return h;
    }
    throw std::runtime_error("incomplete beta: the continued fraction did not converge");
}

// Bisection of a non-decreasing f on [lo, hi] for f(x) = target.
template <typename F>
double bisect(F f, double target, double lo, double hi) {
    for (int i = 0; i < 400 && hi - lo > 1e-15 * std::max(1.0, std::fabs(lo)); ++i) {
        const double mid = 0.5 * (lo + hi);
        (f(mid) < target ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

void require_confidence(double c) {
    if (!(c > 0 && c < 1)) throw std::invalid_argument("confidence must be in (0, 1), got " + std::to_string(c));
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
    if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1))
        throw std::invalid_argument("incomplete beta needs a, b > 0 and 0 <= x <= 1");
    if (x == 0 || x == 1) return x;
    const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
    const double front = std::exp(log_front);
    // The symmetry I_x(a, b) = 1 − I_{1−x}(b, a) keeps the fraction in its fast region.
    if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
    return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
    if (!(df > 0)) throw std::invalid_argument("Student t needs df > 0");
    if (std::isinf(t)) return t > 0 ? 1 : 0;
    // P(|T| > |t|) = I_{df / (df + t²)}(df / 2, 1 / 2) (Abramowitz & Stegun 26.7.1 with 26.5.27).
    const double tail = 0.5 * regularized_incomplete_beta(0.5 * df, 0.5, df / (df + t * t));
    return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1)) throw std::invalid_argument("a quantile needs 0 < p < 1");
    if (p == 0.5) return 0;
    if (p < 0.5) return -student_t_quantile(1 - p, df);
    double hi = 1;
    while (student_t_cdf(hi, df) < p) hi *= 2;  // df = 1, p = 0.9995: 636.6
    return bisect([df](double t) { return student_t_cdf(t, df); }, p, 0, hi);
}

double normal_quantile(double p) {
    if (!(p > 0 && p < 1)) throw std::invalid_argument("a quantile needs 0 < p < 1");
    return bisect([](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }, p, -40, 40);
}

double beta_quantile(double p, double a, double b) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("a quantile needs 0 <= p <= 1");
    if (p == 0 || p == 1) return p;
    return bisect([a, b](double x) { return regularized_incomplete_beta(a, b, x); }, p, 0, 1);
}

MeanInterval mean_interval(const std::vector<double>& values, double confidence) {
    require_confidence(confidence);
    if (values.empty()) throw std::invalid_argument("a mean needs at least one value");
    MeanInterval r;
    r.n = static_cast<int64_t>(values.size());
    r.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(r.n);
    if (r.n == 1) {
        r.sd = kNaN;
        r.ci = {kNaN, kNaN};
        return r;
    }
    double ss = 0;
    for (double v : values) ss += (v - r.mean) * (v - r.mean);
    r.sd = std::sqrt(ss / static_cast<double>(r.n - 1));
    const double half = student_t_quantile(0.5 * (1 + confidence), static_cast<double>(r.n - 1)) * r.sd /
                        std::sqrt(static_cast<double>(r.n));
    r.ci = {r.mean - half, r.mean + half};
    return r;
}

MeanInterval paired_difference(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
    if (a.size() != b.size())
        throw std::invalid_argument("a paired difference needs as many values on each side (" + std::to_string(a.size()) +
                                    " vs " + std::to_string(b.size()) + ")");
    std::vector<double> d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
    return mean_interval(d, confidence);
}

Interval wilson_interval(int64_t successes, int64_t trials, double confidence) {
    require_confidence(confidence);
    if (trials <= 0 || successes < 0 || successes > trials)
        throw std::invalid_argument("a binomial interval needs 0 <= successes <= trials and trials > 0");
    const double n = static_cast<double>(trials), p = static_cast<double>(successes) / n;
    const double z = normal_quantile(0.5 * (1 + confidence)), z2 = z * z;
    const double centre = (p + z2 / (2 * n)) / (1 + z2 / n);
    const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
    return {successes == 0 ? 0.0 : centre - half, successes == trials ? 1.0 : centre + half};
}

Interval clopper_pearson_interval(int64_t successes, int64_t trials, double confidence) {
    require_confidence(confidence);
    if (trials <= 0 || successes < 0 || successes > trials)
        throw std::invalid_argument("a binomial interval needs 0 <= successes <= trials and trials > 0");
    const double alpha = 1 - confidence, k = static_cast<double>(successes), n = static_cast<double>(trials);
    const double low = successes == 0 ? 0.0 : beta_quantile(alpha / 2, k, n - k + 1);
    const double high = successes == trials ? 1.0 : beta_quantile(1 - alpha / 2, k + 1, n - k);
    return {low, high};
}

Interval newcombe_difference_interval(int64_t successes1, int64_t trials1, int64_t successes2, int64_t trials2,
                                      double confidence) {
    const Interval w1 = wilson_interval(successes1, trials1, confidence);
    const Interval w2 = wilson_interval(successes2, trials2, confidence);
    const double p1 = static_cast<double>(successes1) / static_cast<double>(trials1);
    const double p2 = static_cast<double>(successes2) / static_cast<double>(trials2);
    const double delta = std::sqrt((p1 - w1.low) * (p1 - w1.low) + (w2.high - p2) * (w2.high - p2));
    const double epsilon = std::sqrt((w1.high - p1) * (w1.high - p1) + (p2 - w2.low) * (p2 - w2.low));
    return {p1 - p2 - delta, p1 - p2 + epsilon};
}

}  // namespace ql::experiments
