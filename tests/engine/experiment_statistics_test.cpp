// SPDX-License-Identifier: GPL-3.0-or-later
// The experiment statistics against SciPy 1.17.1 (the peers venv), values printed by
//   python -c "import scipy.stats as s; print(repr(s.t.ppf(0.975, 4)))"   and the like:
// s.t.ppf, s.norm.ppf, s.beta.cdf, s.binomtest(k, n).proportion_ci(0.95, 'wilson' | 'exact'),
// s.t.interval(0.95, n - 1, loc=mean, scale=s.sem(x)). Newcombe's interval: his paper's own
// example (Newcombe 1998, Statistics in Medicine 17:873, Table II, 56/70 vs 48/80, method 10).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "engine/experiments/experiment_statistics.h"

namespace ql::experiments {
namespace {

TEST(ExperimentStatistics, StudentTQuantilesMatchScipy) {
    const std::pair<double, double> t975[] = {{1, 12.706204736174694}, {2, 4.302652729749462},  {3, 3.1824463052837078},
                                              {4, 2.7764451051977934}, {9, 2.262157162798205},  {29, 2.045229642132703},
                                              {100, 1.9839715185235518}};
    for (const auto& [df, q] : t975) EXPECT_NEAR(student_t_quantile(0.975, df), q, 1e-9 * q) << "df " << df;
    EXPECT_NEAR(student_t_quantile(0.995, 5), 4.032142983555228, 1e-9);
    EXPECT_NEAR(student_t_quantile(0.025, 4), -2.7764451051977934, 1e-9);
    EXPECT_EQ(student_t_quantile(0.5, 7), 0.0);
    EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-12);
}

TEST(ExperimentStatistics, IncompleteBetaMatchesScipyBetaCdf) {
    EXPECT_NEAR(regularized_incomplete_beta(2.5, 4.0, 0.3), 0.3521975859067672, 1e-13);
    EXPECT_NEAR(regularized_incomplete_beta(0.5, 0.5, 0.9), 0.7951672353008665, 1e-13);
    EXPECT_EQ(regularized_incomplete_beta(3, 2, 0), 0.0);
    EXPECT_EQ(regularized_incomplete_beta(3, 2, 1), 1.0);
    EXPECT_THROW(regularized_incomplete_beta(-1, 2, 0.5), std::invalid_argument);
    EXPECT_THROW(regularized_incomplete_beta(1, 2, 1.5), std::invalid_argument);
}

TEST(ExperimentStatistics, MeanAndPairedDifferenceIntervalsMatchScipy) {
    const std::vector<double> qad = {0.9713, 0.9650, 0.9702}, qat = {0.9600, 0.9573, 0.9655};
    const MeanInterval m = mean_interval(qad);
    EXPECT_EQ(m.n, 3);
    EXPECT_NEAR(m.mean, 0.9688333333333334, 1e-15);
    EXPECT_NEAR(m.ci.low, 0.9604741699460312, 1e-12);
    EXPECT_NEAR(m.ci.high, 0.9771924967206357, 1e-12);
    const MeanInterval d = paired_difference(qad, qat);
    EXPECT_NEAR(d.mean, 0.007899999999999982, 1e-15);
    EXPECT_NEAR(d.ci.low, -0.00030893821798351137, 1e-12);  // this difference is not resolved at n = 3
    EXPECT_NEAR(d.ci.high, 0.016108938217983475, 1e-12);

    const MeanInterval one = mean_interval({0.5});
    EXPECT_EQ(one.mean, 0.5);
    EXPECT_TRUE(std::isnan(one.ci.low) && std::isnan(one.ci.high) && std::isnan(one.sd));
    EXPECT_THROW(mean_interval({}), std::invalid_argument);
    EXPECT_THROW(paired_difference({1, 2}, {1}), std::invalid_argument);
    EXPECT_THROW(mean_interval({1, 2}, 1.5), std::invalid_argument);
}

TEST(ExperimentStatistics, BinomialIntervalsMatchScipyBinomtest) {
    struct Case {
        int64_t k, n;
        double wilson_low, wilson_high, exact_low, exact_high;
    };
    const Case cases[] = {
        {0, 10, 0.0, 0.27753279986288926, 0.0, 0.30849710781876294},
        {3, 10, 0.10779126740630102, 0.6032218525388546, 0.06673951117773447, 0.652452850060008},
        {10, 10, 0.7224672001371109, 1.0, 0.6915028921812371, 1.0},
        {1457, 1500, 0.9616101063172818, 0.9786485836571607, 0.9615789269313825, 0.9791777948047583},
        {1359, 1500, 0.8901770595240772, 0.9197487427311357, 0.8900928124253128, 0.9202956514156522},
    };
    for (const Case& c : cases) {
        const Interval w = wilson_interval(c.k, c.n), e = clopper_pearson_interval(c.k, c.n);
        EXPECT_NEAR(w.low, c.wilson_low, 1e-12) << c.k << "/" << c.n;
        EXPECT_NEAR(w.high, c.wilson_high, 1e-12) << c.k << "/" << c.n;
        EXPECT_NEAR(e.low, c.exact_low, 1e-10) << c.k << "/" << c.n;
        EXPECT_NEAR(e.high, c.exact_high, 1e-10) << c.k << "/" << c.n;
    }
    EXPECT_THROW(wilson_interval(11, 10), std::invalid_argument);
    EXPECT_THROW(clopper_pearson_interval(1, 0), std::invalid_argument);
}

TEST(ExperimentStatistics, NewcombeDifferenceMatchesThePapersExample) {
    const Interval d = newcombe_difference_interval(56, 70, 48, 80);
    EXPECT_NEAR(d.low, 0.0524, 5e-5);
    EXPECT_NEAR(d.high, 0.3339, 5e-5);
}

}  // namespace
}  // namespace ql::experiments
