// SPDX-License-Identifier: GPL-3.0-or-later
// Experiment files: parsing, validation with errors naming the file and field, grid expansion,
// replicate seeds, the built-in templates, and the analysis of finished runs.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/experiments/experiment_analysis.h"
#include "engine/experiments/experiment_spec.h"

namespace ql::experiments {
namespace {

using nlohmann::json;

const char* kSmall = R"({"quantlab_experiment": 1, "name": "small", "replicates": 2, "seed": 10,
  "base": {"recipe": "NVFP4_DEFAULT", "steps": 5},
  "grid": {"method": ["ptq", "qad"], "lr": [1e-4, 3e-4]},
  "metrics": ["exact_match", "kl"],
  "comparisons": [{"a": {"method": "qad"}, "b": {"method": "ptq"}}]})";

std::string error_of(const std::string& text) {
    try {
        parse_experiment(text, "x.json");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(ExperimentSpec, ExpandsTheGridRowMajorWithReplicateSeeds) {
    const ExperimentSpec s = parse_experiment(kSmall, "small.json");
    ASSERT_EQ(s.axes, (std::vector<std::string>{"lr", "method"}));
    ASSERT_EQ(s.cells.size(), 4u);
    EXPECT_EQ(s.cells[0].key, "lr=0.0001,method=ptq");
    EXPECT_EQ(s.cells[1].key, "lr=0.0001,method=qad");
    EXPECT_EQ(s.cells[3].key, "lr=0.0003,method=qad");
    EXPECT_EQ(s.cells[3].parameters.method, "qad");
    EXPECT_DOUBLE_EQ(s.cells[3].parameters.lr, 3e-4);
    EXPECT_EQ(s.cells[3].parameters.steps, 5);
    EXPECT_EQ(s.cells[3].parameters.recipe, "NVFP4_DEFAULT");
    const std::vector<PlannedRun> plan = plan_runs(s);
    ASSERT_EQ(plan.size(), 8u);
    EXPECT_EQ(plan[0].seed, 10u);
    EXPECT_EQ(plan[3].replicate, 0);
    EXPECT_EQ(plan[4].replicate, 1);
    EXPECT_EQ(plan[4].seed, 11u);
    EXPECT_EQ(plan[4].cell->key, s.cells[0].key);
}

TEST(ExperimentSpec, MoreReplicatesKeepTheIdentityOtherChangesDoNot) {
    const ExperimentSpec a = parse_experiment(kSmall, "a");
    json j = json::parse(kSmall);
    j["replicates"] = 5;
    j["claim"] = "prose";
    EXPECT_EQ(parse_experiment(j.dump(), "b").identity_sha256, a.identity_sha256);
    j["base"]["steps"] = 6;
    EXPECT_NE(parse_experiment(j.dump(), "c").identity_sha256, a.identity_sha256);
}

TEST(ExperimentSpec, BadFieldsNameTheFileAndField) {
    EXPECT_NE(error_of("{").find("x.json"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 2, "name": "a"})").find("'quantlab_experiment'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "A b"})").find("'name'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "bogus": 1})").find("'bogus'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "base": {"stepz": 3}})").find("'base.stepz'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"method": ["ptq", "kd"]}})").find("'grid.method[1]'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"steps": [1, 1]}})").find("twice"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"lr": [-1]}})").find("'grid.lr[0]'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "replicates": 0})").find("'replicates'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "metrics": ["speed"]})").find("'metrics'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"method": ["ptq", "qat"]},
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "ptq"}}]})").find("'comparisons[0].a.method'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "name": "b"})").find("duplicate"), std::string::npos);
    EXPECT_THROW(load_experiment("/nonexistent/e.json"), UserError);
}

TEST(ExperimentSpec, EveryTemplateParsesAndTheOverridesApply) {
    const std::vector<std::string> names = experiment_template_names();
    EXPECT_EQ(names.front(), "qad-vs-qat");
    for (const std::string& name : names) {
        const ExperimentSpec s = load_experiment(name);
        EXPECT_EQ(s.name, name);
        EXPECT_FALSE(s.claim.empty()) << name;
        EXPECT_FALSE(s.source.empty()) << name;
        EXPECT_FALSE(s.cells.empty()) << name;
    }
    ExperimentOverrides o;
    o.replicates = 2;
    o.model = "/some/model";
    o.steps = 4;
    const ExperimentSpec q = load_experiment("qad-vs-qat", o);
    EXPECT_EQ(q.replicates, 2);
    ASSERT_EQ(q.cells.size(), 3u);
    EXPECT_EQ(q.cells[1].key, "method=qat");
    EXPECT_EQ(q.cells[1].parameters.model, "/some/model");
    EXPECT_EQ(q.cells[1].parameters.steps, 4);
    // Inline recipes: a cell names them, the run gets the recipe JSON.
    const ExperimentSpec n = load_experiment("nvfp4-vs-mxfp4");
    bool inline_seen = false;
    for (const Cell& c : n.cells)
        if (c.values.at("recipe") == "INT4_W4A4_G64") {
            inline_seen = true;
            EXPECT_EQ(json::parse(c.parameters.recipe_json)["quant_cfg"][1]["cfg"]["format"], "int4");
        }
    EXPECT_TRUE(inline_seen);
}

TEST(ExperimentAnalysis, CellMeansAndPairedDifferencesWithTIntervals) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 3,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "kl"],
        "comparisons": [{"name": "QAD − QAT", "a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    std::vector<RunResult> runs;
    const double qad[] = {0.9713, 0.9650, 0.9702}, qat[] = {0.9600, 0.9573, 0.9655};
    for (int r = 0; r < 3; ++r) {
        runs.push_back({"method=qad", r, 10 + r, {{"exact_match", qad[r]}, {"kl", 0.01}}, 500});
        runs.push_back({"method=qat", r, 20 + r, {{"exact_match", qat[r]}}, 500});
    }
    const ExperimentResult res = analyse(s, runs);
    ASSERT_EQ(res.cells.size(), 2u);
    EXPECT_EQ(res.cells[0].cell->key, "method=qat");
    const MetricSummary& m = res.cells[1].metrics[0];
    EXPECT_EQ(m.interval, "t");
    EXPECT_NEAR(m.value.ci.low, 0.9604741699460312, 1e-12);  // scipy.stats.t.interval (statistics test)
    EXPECT_EQ(res.cells[0].metrics.size(), 1u);               // qat runs reported no kl
    ASSERT_EQ(res.comparisons.size(), 1u);
    EXPECT_EQ(res.comparisons[0].a, "method=qad");
    EXPECT_EQ(res.comparisons[0].b, "method=qat");
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.mean, 0.0079, 1e-12);
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.ci.high, 0.016108938217983475, 1e-12);
    const json j = json::parse(result_json(s, res));
    EXPECT_EQ(j["cells"][1]["metrics"]["exact_match"]["n"], 3);
    EXPECT_NEAR(j["comparisons"][0]["metrics"]["exact_match"]["ci_low"].get<double>(), -0.00030893821798351137, 1e-12);
    EXPECT_NE(result_text(s, res).find("QAD − QAT"), std::string::npos);
}

// Two replicates of a rate near 100 %: t(0.975, 1) = 12.7 puts the unclipped interval far past
// 1; a rate's interval stops at [0, 1] (a difference's at [-1, 1]), other metrics' do not.
TEST(ExperimentAnalysis, RateIntervalsStayWithinTheirRange) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 2,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "loss"],
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    const std::vector<RunResult> runs = {{"method=qad", 0, 1, {{"exact_match", 1.0}, {"loss", 0.5}}, 200},
                                         {"method=qad", 1, 2, {{"exact_match", 0.95}, {"loss", 0.7}}, 200},
                                         {"method=qat", 0, 3, {{"exact_match", 0.10}, {"loss", 0.5}}, 200},
                                         {"method=qat", 1, 4, {{"exact_match", 0.02}, {"loss", 0.7}}, 200}};
    const ExperimentResult res = analyse(s, runs);
    const MetricSummary& qad = res.cells[1].metrics[0];
    EXPECT_NEAR(qad.value.mean, 0.975, 1e-12);
    EXPECT_EQ(qad.value.ci.high, 1.0);                                        // 0.975 + 12.706 * 0.025 = 1.29
    EXPECT_NEAR(qad.value.ci.low, 0.975 - 12.706204736174707 * 0.025, 1e-9);  // inside: unchanged
    EXPECT_EQ(res.cells[0].metrics[0].value.ci.low, 0.0);                     // 0.06 - 0.51 < 0
    EXPECT_LT(res.cells[0].metrics[1].value.ci.low, 0.0);                     // loss: 0.6 - 1.27, not a rate
    const MetricSummary& d = res.comparisons[0].metrics[0];                   // 0.9 and 0.93: 0.915 ± 0.19
    EXPECT_NEAR(d.value.mean, 0.915, 1e-12);
    EXPECT_EQ(d.value.ci.high, 1.0);
    EXPECT_NEAR(d.value.ci.low, 0.915 - 12.706204736174707 * 0.015, 1e-9);
}

TEST(ExperimentAnalysis, OneReplicateGetsBinomialIntervals) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 1,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "kl"],
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    const std::vector<RunResult> runs = {{"method=qad", 0, 1, {{"exact_match", 56.0 / 70}, {"kl", 0.01}}, 70},
                                         {"method=qat", 0, 2, {{"exact_match", 48.0 / 80}, {"kl", 0.02}}, 80}};
    const ExperimentResult res = analyse(s, runs);
    EXPECT_EQ(res.cells[1].metrics[0].interval, "wilson");
    EXPECT_NEAR(res.cells[1].metrics[0].value.ci.low, wilson_interval(56, 70).low, 1e-15);
    EXPECT_EQ(res.cells[1].metrics[1].interval, "none");  // a KL has no interval from one run
    EXPECT_TRUE(std::isnan(res.cells[1].metrics[1].value.ci.low));
    EXPECT_EQ(res.comparisons[0].metrics[0].interval, "newcombe");
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.ci.low, 0.0524, 5e-5);
    EXPECT_EQ(json::parse(result_json(s, res))["cells"][1]["metrics"]["kl"]["ci_low"], nullptr);
}

}  // namespace
}  // namespace ql::experiments
