// SPDX-License-Identifier: GPL-3.0-or-later
// Eval-suite statistics (docs/EVAL_SUITES.md "Metrics") against values computed independently:
// Wilson intervals by the closed form (Wilson 1927) in Python,
//   z = 1.959963984540054; p = s/n; d = 1 + z*z/n; c = (p + z*z/(2*n)) / d
//   h = z * sqrt(p*(1-p)/n + z*z/(4*n*n)) / d            -> (c - h, c + h)
//   7/10 -> (0.39677814746114537, 0.8922087325936989), 0/5 -> (0, 0.43448246478317476)
// McNemar's exact p by the binomial sum 2 sum_{k <= min(b,c)} C(b+c, k) / 2^(b+c), and the
// bootstrap percentiles against the exact bootstrap distribution (below).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/evaluation/eval_comparison.h"
#include "tests/engine/user_error_text.h"

namespace ql::evaluation {
namespace {

ItemOutcome outcome(const std::string& id, const std::string& category, bool passed) {
    ItemOutcome o;
    o.id = id;
    o.category = category;
    o.check = "exact";
    o.passed = passed;
    return o;
}

ModelEvalReport report(const std::string& model, const std::vector<ItemOutcome>& items) {
    ModelEvalReport r;
    r.model = model;
    r.suite = "s.jsonl";
    r.suite_sha256 = std::string(64, 'a');
    r.items = items;
    return r;
}

TEST(EvalComparison, WilsonIntervalsMatchTheClosedForm) {
    const RateInterval r = rate_interval(7, 10);
    EXPECT_DOUBLE_EQ(r.rate, 0.7);
    EXPECT_NEAR(r.ci.low, 0.39677814746114537, 1e-12);
    EXPECT_NEAR(r.ci.high, 0.8922087325936989, 1e-12);
    const RateInterval zero = rate_interval(0, 5);
    EXPECT_NEAR(zero.ci.low, 0.0, 1e-15);
    EXPECT_NEAR(zero.ci.high, 0.43448246478317476, 1e-12);
    const RateInterval none = rate_interval(0, 0);
    EXPECT_TRUE(std::isnan(none.rate) && std::isnan(none.ci.low) && std::isnan(none.ci.high));
}

TEST(EvalComparison, McNemarExactPMatchesTheBinomialSum) {
    EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 5), 2.0 / 32);                       // 0.0625
    EXPECT_NEAR(mcnemar_exact_p(1, 9), 2.0 * (1 + 10) / 1024, 1e-14);        // 0.021484375
    EXPECT_NEAR(mcnemar_exact_p(10, 2), 2.0 * (1 + 12 + 66) / 4096, 1e-14);  // 0.03857421875
    EXPECT_EQ(mcnemar_exact_p(3, 3), 1.0);
    EXPECT_EQ(mcnemar_exact_p(0, 0), 1.0);
}

TEST(EvalComparison, SummaryCountsCategoriesSchemasToolsConstraintsAndVariants) {
    std::vector<ItemOutcome> items = {outcome("a1", "arith", true), outcome("a2", "arith", false), outcome("a3", "arith", true)};
    ItemOutcome j1 = outcome("j1", "json", true), j2 = outcome("j2", "json", false);
    j1.json_valid = true;
    j2.json_valid = true;  // valid JSON, wrong values
    ItemOutcome t1 = outcome("t1", "tools", false), t2 = outcome("t2", "tools", true);
    t1.tool_name_correct = true;
    t1.tool_arguments_correct = false;
    t2.tool_name_correct = true;
    t2.tool_arguments_correct = true;
    ItemOutcome i1 = outcome("i1", "instr", false);
    i1.check = "instructions";
    i1.details = {{"word_count", true, "3 words"}, {"lowercase", false, "not all lowercase"}};
    ItemOutcome v1 = outcome("a1-typo", "adversarial", false), v2 = outcome("a2-typo", "adversarial", true),
                v3 = outcome("a3-typo", "adversarial", true);
    v1.variant_of = "a1", v2.variant_of = "a2", v3.variant_of = "a3";
    v1.variant = v2.variant = v3.variant = "typo";
    items.insert(items.end(), {j1, j2, t1, t2, i1, v1, v2, v3});
    const ModelSummary s = summarize(report("fp", items));
    EXPECT_EQ(s.overall.successes, 6);
    EXPECT_EQ(s.overall.trials, 11);
    ASSERT_EQ(s.categories.size(), 5u);
    EXPECT_EQ(s.categories[0].first, "arith");
    EXPECT_EQ(s.categories[0].second.successes, 2);
    EXPECT_EQ(s.categories[0].second.trials, 3);
    EXPECT_EQ(s.categories[4].first, "adversarial");
    EXPECT_EQ(s.json_valid.successes, 2);
    EXPECT_EQ(s.json_valid.trials, 2);
    EXPECT_EQ(s.tool_name.successes, 2);
    EXPECT_EQ(s.tool_arguments.successes, 1);
    EXPECT_EQ(s.tool_arguments.trials, 2);
    ASSERT_EQ(s.constraints.size(), 2u);
    EXPECT_EQ(s.constraints[1].first, "lowercase");
    EXPECT_EQ(s.constraints[1].second.successes, 0);
    ASSERT_EQ(s.variants.size(), 1u);
    EXPECT_EQ(s.variants[0].second.successes, 2);
    EXPECT_EQ(s.variants[0].second.trials, 3);
    // Consistency: a1 and a3 passed; of their typos, a3-typo passed.
    EXPECT_EQ(s.variant_consistency[0].second.successes, 1);
    EXPECT_EQ(s.variant_consistency[0].second.trials, 2);
}

TEST(EvalComparison, FlipsArePairedByIdWithTheirIds) {
    const ModelEvalReport fp = report("fp", {outcome("f1", "facts", true), outcome("f2", "facts", true), outcome("f3", "facts", false),
                                             outcome("m1", "math", false), outcome("m2", "math", true)});
    // The quantized model's report lists the items in another order.
    const ModelEvalReport q = report("int4", {outcome("m2", "math", false), outcome("f3", "facts", true), outcome("f2", "facts", false),
                                              outcome("f1", "facts", true), outcome("m1", "math", false)});
    const EvalComparison c = compare({fp, q});
    ASSERT_EQ(c.summaries.size(), 2u);
    ASSERT_EQ(c.comparisons.size(), 1u);
    const ModelComparison& mc = c.comparisons[0];
    EXPECT_EQ(mc.model, "int4");
    EXPECT_EQ(mc.baseline, "fp");
    EXPECT_EQ(mc.overall.items, 5);
    EXPECT_EQ(mc.overall.both_right, 1);
    EXPECT_EQ(mc.overall.right_to_wrong, 2);
    EXPECT_EQ(mc.overall.wrong_to_right, 1);
    EXPECT_EQ(mc.overall.both_wrong, 1);
    EXPECT_EQ(mc.overall.right_to_wrong_ids, (std::vector<std::string>{"f2", "m2"}));
    EXPECT_EQ(mc.overall.wrong_to_right_ids, std::vector<std::string>{"f3"});
    EXPECT_DOUBLE_EQ(mc.overall.baseline_rate, 0.6);
    EXPECT_DOUBLE_EQ(mc.overall.model_rate, 0.4);
    EXPECT_DOUBLE_EQ(mc.overall.difference, -0.2);
    EXPECT_DOUBLE_EQ(mc.overall.mcnemar_p, 1.0);  // 2 P(X <= 1), X ~ Bin(3, 1/2) = 2 * 4/8
    ASSERT_EQ(mc.categories.size(), 2u);
    EXPECT_EQ(mc.categories[0].category, "facts");
    EXPECT_EQ(mc.categories[0].right_to_wrong_ids, std::vector<std::string>{"f2"});
    EXPECT_EQ(mc.categories[1].category, "math");
    EXPECT_EQ(mc.categories[1].right_to_wrong_ids, std::vector<std::string>{"m2"});
    EXPECT_DOUBLE_EQ(mc.categories[1].difference, -0.5);
    EXPECT_LE(mc.overall.bootstrap.low, mc.overall.difference);
    EXPECT_GE(mc.overall.bootstrap.high, mc.overall.difference);
}

TEST(EvalComparison, ReportsOfOtherSuitesOrItemsAreRefused) {
    const ModelEvalReport fp = report("fp", {outcome("a", "c", true), outcome("b", "c", true)});
    ModelEvalReport other = report("q", {outcome("a", "c", true), outcome("b", "c", true)});
    other.suite_sha256 = std::string(64, 'b');
    EXPECT_EQ(test::user_error_text([&] { compare({fp, other}); }).substr(0, 47), "eval report of q is for another suite (sha256 b");
    const ModelEvalReport fewer = report("q", {outcome("a", "c", true)});
    EXPECT_EQ(test::user_error_text([&] { compare({fp, fewer}); }), "eval report of q has 1 items, fp's 2");
    const ModelEvalReport renamed = report("q", {outcome("a", "c", true), outcome("z", "c", true)});
    EXPECT_EQ(test::user_error_text([&] { compare({fp, renamed}); }), "eval report of q has item z, which fp's has not");
    const ModelEvalReport twice = report("q", {outcome("a", "c", true), outcome("a", "c", true)});
    EXPECT_EQ(test::user_error_text([&] { compare({fp, twice}); }), "eval report of q: item a appears twice");
}

// The bootstrap distribution of the mean paired difference is known exactly: with b items
// right -> wrong (d = -1), c wrong -> right (d = +1) and t ties among n, a resample's sum is
// C* - B* with (B*, C*, T*) ~ Multinomial(n; b/n, c/n, t/n). Its 2.5 % and 97.5 % quantiles are
// lattice points k/n; for n = 20, b = 5, c = 2 they are -8/20 and 2/20 (Python, exact fractions,
// over the same enumeration), and no CDF step lies within 0.0097 of 0.025 or 0.975, so 20000
// resamples (standard error of an empirical quantile ~ 0.0011) land on exactly those points.
TEST(EvalComparison, PairedBootstrapPercentilesMatchTheExactBootstrapDistribution) {
    const int n = 20, b = 5, c = 2;
    std::vector<uint8_t> base(n, 1), model(n, 1);
    for (int i = 0; i < b; ++i) model[i] = 0;              // right -> wrong
    for (int i = b; i < b + c; ++i) base[i] = 0;           // wrong -> right
    for (int i = b + c; i < b + c + 4; ++i) base[i] = model[i] = 0;  // some both wrong (ties)

    // The exact distribution, enumerated here as well.
    std::vector<double> pmf(2 * n + 1, 0.0);
    const double pb = double(b) / n, pc = double(c) / n, pt = 1 - pb - pc;
    for (int B = 0; B <= n; ++B)
        for (int C = 0; B + C <= n; ++C) {
            const int T = n - B - C;
            const double log_p = std::lgamma(n + 1) - std::lgamma(B + 1) - std::lgamma(C + 1) - std::lgamma(T + 1) + B * std::log(pb) +
                                 C * std::log(pc) + T * std::log(pt);
            pmf[C - B + n] += std::exp(log_p);
        }
    double cdf = 0, lo = NAN, hi = NAN, margin = 1;
    for (int k = -n; k <= n; ++k) {
        cdf += pmf[k + n];
        margin = std::min({margin, std::fabs(cdf - 0.025), std::fabs(cdf - 0.975)});
        if (std::isnan(lo) && cdf > 0.025) lo = double(k) / n;
        if (std::isnan(hi) && cdf > 0.975) hi = double(k) / n;
    }
    EXPECT_DOUBLE_EQ(lo, -8.0 / 20);
    EXPECT_DOUBLE_EQ(hi, 2.0 / 20);
    EXPECT_GT(margin, 0.009);
    for (uint64_t seed : {1u, 38u, 12345u}) {
        const experiments::Interval ci = paired_bootstrap_interval(base, model, 20000, seed, 0.95);
        EXPECT_DOUBLE_EQ(ci.low, lo) << "seed " << seed;
        EXPECT_DOUBLE_EQ(ci.high, hi) << "seed " << seed;
    }
}

TEST(EvalComparison, PairedBootstrapIsDeterministicAndDegeneratesSensibly) {
    std::vector<uint8_t> base = {1, 1, 0, 1, 0, 1, 1, 0, 1, 1}, model = {1, 0, 0, 1, 1, 0, 1, 0, 0, 1};
    const auto a = paired_bootstrap_interval(base, model, 2000, 7, 0.95), again = paired_bootstrap_interval(base, model, 2000, 7, 0.95);
    EXPECT_EQ(a.low, again.low);
    EXPECT_EQ(a.high, again.high);
    EXPECT_LE(a.low, -0.2);
    EXPECT_GE(a.high, -0.2);
    // Identical outcomes: every resample's difference is 0.
    const auto same = paired_bootstrap_interval(base, base, 2000, 7, 0.95);
    EXPECT_EQ(same.low, 0.0);
    EXPECT_EQ(same.high, 0.0);
    const auto empty = paired_bootstrap_interval({}, {}, 2000, 7, 0.95);
    EXPECT_TRUE(std::isnan(empty.low) && std::isnan(empty.high));
    EXPECT_THROW(paired_bootstrap_interval(base, {1}, 2000, 7, 0.95), std::invalid_argument);
}

TEST(EvalComparison, JsonAndCsvTables) {
    const ModelEvalReport fp = report("fp", {outcome("a", "facts", true), outcome("b", "facts", false)});
    const ModelEvalReport q = report("q, 4-bit", {outcome("a", "facts", false), outcome("b", "facts", false)});
    BootstrapOptions options;
    options.resamples = 100;
    const EvalComparison c = compare({fp, q}, options);
    const auto j = comparison_json(c);
    EXPECT_EQ(j["bootstrap"]["resamples"], 100);
    EXPECT_EQ(j["summaries"][0]["categories"]["facts"]["successes"], 1);
    EXPECT_TRUE(j["summaries"][0]["json_valid"]["rate"].is_null());
    EXPECT_EQ(j["comparisons"][0]["overall"]["right_to_wrong_ids"][0], "a");
    const std::string flips = flips_csv(c);
    EXPECT_EQ(flips, "model,baseline,category,id,direction\n\"q, 4-bit\",fp,facts,a,right_to_wrong\n");
    const std::string paired = paired_csv(c);
    EXPECT_EQ(paired.substr(0, paired.find('\n')),
              "model,baseline,category,items,both_right,right_to_wrong,wrong_to_right,both_wrong,baseline_rate,model_rate,difference,ci_low,"
              "ci_high,mcnemar_p");
    EXPECT_NE(paired.find("\n\"q, 4-bit\",fp,overall,2,0,1,0,1,0.5,0,-0.5,"), std::string::npos);
    const std::string summary = summary_csv(c);
    // Wilson 1/2 by the closed form: (0.09453120573423074, 0.9054687942657693).
    const std::string row = "\nfp,category,facts,1,2,0.5,";
    const size_t at = summary.find(row);
    ASSERT_NE(at, std::string::npos) << summary;
    const std::string rest = summary.substr(at + row.size(), summary.find('\n', at + 1) - at - row.size());
    EXPECT_NEAR(std::stod(rest.substr(0, rest.find(','))), 0.09453120573423074, 1e-12);
    EXPECT_NEAR(std::stod(rest.substr(rest.find(',') + 1)), 0.9054687942657693, 1e-12);
    EXPECT_NE(summary.find("\nfp,json_valid,json_valid,0,0,,,\n"), std::string::npos);
}

}  // namespace
}  // namespace ql::evaluation
