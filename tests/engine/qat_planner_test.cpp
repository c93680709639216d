// SPDX-License-Identifier: GPL-3.0-or-later
// The compute-optimal QAT planner (engine/core/qat_plan.h): QAT.md's worked examples, the
// uncertainty band, the caveats it must show, the S <= 1 edge, bad inputs; and the quadratic fit
// of a measured fraction sweep on synthetic data with a known optimum.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/qat_plan.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

using test::user_error_text;

bool has_caveat(const QatPlan& p, const std::string& needle) {
    for (const std::string& c : p.caveats)
        if (c.find(needle) != std::string::npos) return true;
    return false;
}

TEST(QatPlanner, OneBillionParametersFourBitHundredBillionTokens) {
    // QAT.md: S = 1e11 / (1e9 * 4 / 8) = 200, f = exp(-6.7297 / ln 200) ~ 0.28.
    const QatPlan p = plan_qat({1'000'000'000, 4, 100e9});
    EXPECT_DOUBLE_EQ(p.tokens_per_parameter_byte, 200.0);
    EXPECT_NEAR(p.optimal_qat_fraction, 0.28, 1e-3);
    EXPECT_NEAR(p.optimal_qat_fraction, 0.2807873, 1e-6);  // exp(-6.7297 / 5.2983174)
    EXPECT_NEAR(p.fraction_low, 0.2807873 - 0.09, 1e-6);
    EXPECT_NEAR(p.fraction_high, 0.2807873 + 0.09, 1e-6);
    EXPECT_NEAR(p.qat_tokens, 28.0787264e9, 1e3);
    EXPECT_DOUBLE_EQ(p.qat_tokens + p.fp_tokens, 100e9);
    EXPECT_NE(p.source.find("arXiv 2509.22935"), std::string::npos);
    EXPECT_NE(p.source.find("Dremov"), std::string::npos);
    EXPECT_TRUE(has_caveat(p, "natural log is inferred"));
    EXPECT_TRUE(has_caveat(p, "would give f = 0.415 here"));  // exp(-6.7297 / log2 200) = 0.41461
    EXPECT_TRUE(has_caveat(p, "0.09"));
    EXPECT_FALSE(has_caveat(p, "outside the fit"));  // 1 B parameters, 4 bits: inside the fit
    EXPECT_FALSE(has_caveat(p, "was not in the fit"));
}

TEST(QatPlanner, EightySixMillionParametersTwoBitOneTrillionTokens) {
    // S = 1e12 / (86e6 * 2 / 8) = 46511.63, f = exp(-6.7297 / 10.74747) ~ 0.535 (QAT.md: ~0.54).
    const QatPlan p = plan_qat({86'000'000, 2, 1e12});
    EXPECT_NEAR(p.tokens_per_parameter_byte, 46511.6279, 1e-3);
    EXPECT_NEAR(p.optimal_qat_fraction, 0.5346373, 1e-6);
    EXPECT_NEAR(p.optimal_qat_fraction, 0.54, 1e-2);
    EXPECT_NEAR(p.fp_tokens, 1e12 * (1.0 - 0.5346373), 1e6);
}

TEST(QatPlanner, TheFixedTenPercentIsOptimalOnlyNearS19) {
    // f = 0.1  <=>  ln S = 6.7297 / ln 10  <=>  S = 18.5909.
    const double s = std::exp(kQatFractionLawA / std::log(10.0));
    EXPECT_NEAR(s, 18.5909, 1e-3);
    // 1 M parameters, 8 bits: 1 MB of weights; 18.5909 M tokens gives S = 18.5909.
    const QatPlan p = plan_qat({1'000'000, 8, 18.5909e6});
    EXPECT_NEAR(p.tokens_per_parameter_byte, 18.5909, 1e-9);
    EXPECT_NEAR(p.optimal_qat_fraction, 0.1, 1e-3);
    EXPECT_NEAR(p.fraction_low, 0.01, 1e-3);
    EXPECT_TRUE(has_caveat(p, "outside the fit"));      // 1 M parameters < 86 M
    EXPECT_TRUE(has_caveat(p, "Bit width 8 was not in the fit"));
}

TEST(QatPlanner, TheFractionRisesWithTheBudgetAndTheBandIsClamped) {
    double last = 0.0;
    for (double tokens : {1e9, 1e10, 1e11, 1e12, 1e13}) {
        const double f = plan_qat({500'000'000, 4, tokens}).optimal_qat_fraction;
        EXPECT_GT(f, last) << tokens;
        last = f;
    }
    // Near S = 1+ the fraction is ~0 and the low end of the band clamps at 0.
    const QatPlan small = plan_qat({1'000'000'000, 8, 1.5e9});  // S = 1.5
    EXPECT_NEAR(small.optimal_qat_fraction, std::exp(-6.7297 / std::log(1.5)), 1e-15);
    EXPECT_DOUBLE_EQ(small.fraction_low, 0.0);
    EXPECT_NEAR(small.fraction_high, small.optimal_qat_fraction + 0.09, 1e-15);
}

TEST(QatPlanner, SAtOrBelowOneReturnsZeroAndSaysWhy) {
    const QatPlan p = plan_qat({1'000'000'000, 8, 1e9});  // S = 1: ln S = 0
    EXPECT_DOUBLE_EQ(p.tokens_per_parameter_byte, 1.0);
    EXPECT_DOUBLE_EQ(p.optimal_qat_fraction, 0.0);
    EXPECT_DOUBLE_EQ(p.fraction_low, 0.0);
    EXPECT_DOUBLE_EQ(p.fraction_high, 0.09);
    EXPECT_DOUBLE_EQ(p.qat_tokens, 0.0);
    EXPECT_DOUBLE_EQ(p.fp_tokens, 1e9);
    EXPECT_TRUE(has_caveat(p, "formula is undefined; the planner returns 0"));
    const QatPlan q = plan_qat({1'000'000'000, 16, 1e8});  // S = 0.05
    EXPECT_DOUBLE_EQ(q.optimal_qat_fraction, 0.0);
    EXPECT_TRUE(has_caveat(q, "S = 0.05 <= 1"));
    EXPECT_FALSE(has_caveat(plan_qat({1'000'000'000, 4, 100e9}), "undefined"));
}

TEST(QatPlanner, BadInputsAreUserErrors) {
    EXPECT_EQ(user_error_text([] { plan_qat({0, 4, 1e9}); }), "QAT planner: parameters must be a positive count, got 0");
    EXPECT_EQ(user_error_text([] { plan_qat({-5, 4, 1e9}); }), "QAT planner: parameters must be a positive count, got -5");
    EXPECT_EQ(user_error_text([] { plan_qat({1000, 0, 1e9}); }), "QAT planner: bits must be in 1..16, got 0");
    EXPECT_EQ(user_error_text([] { plan_qat({1000, 17, 1e9}); }), "QAT planner: bits must be in 1..16, got 17");
    EXPECT_EQ(user_error_text([] { plan_qat({1000, 4, 0.0}); }),
              "QAT planner: total tokens must be a positive finite number, got 0");
    EXPECT_EQ(user_error_text([] { plan_qat({1000, 4, -1e9}); }),
              "QAT planner: total tokens must be a positive finite number, got -1e+09");
    EXPECT_EQ(user_error_text([] { plan_qat({1000, 4, INFINITY}); }),
              "QAT planner: total tokens must be a positive finite number, got inf");
}

TEST(QatFractionFit, RecoversTheOptimumOfAnExactQuadratic) {
    // loss = 3 + 2 (f - 0.3)^2: optimum 0.3, loss 3, zero residual.
    std::vector<QatFractionPoint> pts;
    for (double f : {0.05, 0.1, 0.2, 0.4, 0.6}) pts.push_back({f, 3.0 + 2.0 * (f - 0.3) * (f - 0.3)});
    const QatFractionFit fit = fit_qat_fraction_curve(pts);
    EXPECT_TRUE(fit.convex);
    EXPECT_NEAR(fit.c2, 2.0, 1e-9);
    EXPECT_NEAR(fit.c1, -1.2, 1e-9);
    EXPECT_NEAR(fit.c0, 3.18, 1e-9);
    EXPECT_NEAR(fit.optimum_fraction, 0.3, 1e-9);
    EXPECT_NEAR(fit.optimum_loss, 3.0, 1e-12);
    EXPECT_NEAR(fit.rms_residual, 0.0, 1e-12);
    EXPECT_DOUBLE_EQ(fit.min_fraction, 0.05);
    EXPECT_DOUBLE_EQ(fit.max_fraction, 0.6);
}

TEST(QatFractionFit, NoisySweepMatchesNumpyPolyfit) {
    // loss = 2 + 5 (f - 0.4)^2 + (+d, -d, +d, -d, +d): the noise is symmetric about 0.4, so the
    // optimum stays there. Reference: numpy.polyfit(f, loss, 2) -> [5.02857143, -4.02285714, 2.8042],
    // RMS residual 8.552359741e-4.
    const double d = 0.001;
    std::vector<QatFractionPoint> pts;
    const double fs[] = {0.2, 0.3, 0.4, 0.5, 0.6};
    for (int i = 0; i < 5; ++i) pts.push_back({fs[i], 2.0 + 5.0 * (fs[i] - 0.4) * (fs[i] - 0.4) + (i % 2 ? -d : d)});
    const QatFractionFit fit = fit_qat_fraction_curve(pts);
    EXPECT_TRUE(fit.convex);
    EXPECT_NEAR(fit.c2, 5.02857143, 1e-8);
    EXPECT_NEAR(fit.c1, -4.02285714, 1e-8);
    EXPECT_NEAR(fit.c0, 2.8042, 1e-8);
    EXPECT_NEAR(fit.optimum_fraction, 0.4, 1e-9);
    EXPECT_NEAR(fit.rms_residual, 8.552359741e-4, 1e-12);
}

TEST(QatFractionFit, OptimumOutsideTheMeasuredRangeIsClampedToIt) {
    std::vector<QatFractionPoint> pts;
    for (double f : {0.1, 0.2, 0.3}) pts.push_back({f, 1.0 + (f - 0.8) * (f - 0.8)});  // true optimum 0.8
    const QatFractionFit fit = fit_qat_fraction_curve(pts);
    EXPECT_TRUE(fit.convex);
    EXPECT_DOUBLE_EQ(fit.optimum_fraction, 0.3);
    EXPECT_NEAR(fit.optimum_loss, 1.25, 1e-12);
    // Concave data: the end point with the lower fitted loss.
    std::vector<QatFractionPoint> cap;
    for (double f : {0.1, 0.3, 0.5, 0.7}) cap.push_back({f, 2.0 - (f - 0.45) * (f - 0.45)});
    const QatFractionFit c = fit_qat_fraction_curve(cap);
    EXPECT_FALSE(c.convex);
    EXPECT_DOUBLE_EQ(c.optimum_fraction, 0.1);  // 0.35 from 0.45 is further than 0.25
}

TEST(QatFractionFit, BadInputsAreUserErrors) {
    EXPECT_EQ(user_error_text([] { fit_qat_fraction_curve({{0.1, 1.0}, {0.2, 0.9}}); }),
              "QAT fraction fit: needs at least 3 measured (fraction, loss) points, got 2");
    EXPECT_EQ(user_error_text([] { fit_qat_fraction_curve({{0.1, 1.0}, {0.2, 0.9}, {0.2, 0.95}}); }),
              "QAT fraction fit: needs at least 3 distinct fractions to fit a quadratic, got 2");
    EXPECT_EQ(user_error_text([] { fit_qat_fraction_curve({{0.1, 1.0}, {1.2, 0.9}, {0.3, 0.95}}); }),
              "QAT fraction fit: point 1: fraction must be in [0, 1], got 1.2");
    EXPECT_EQ(user_error_text([] { fit_qat_fraction_curve({{0.1, 1.0}, {0.2, 0.9}, {0.3, NAN}}); }),
              "QAT fraction fit: point 2: loss is not finite");
}

}  // namespace
}  // namespace ql
