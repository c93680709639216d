// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli experiment run / show as users call it: the qad-vs-qat template on a demo trained
// for a few steps into the build folder's test cache (as cli_demo_eval_test does), with two
// training steps per run so the whole grid runs in a test.
#include <gtest/gtest.h>


#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"
#include "tests/app/cli_test_demo.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CliExperiment : public ::testing::Test {
protected:
    void SetUp() override { ensure_cli_test_demo(); }
};

std::vector<std::string> qad_vs_qat(const std::string& project, int replicates) {
    return {"experiment", "run", "qad-vs-qat", "--project", project, "--replicates", std::to_string(replicates),
            "--steps", "2", "--eval-samples", "40", "--json"};
}

TEST_F(CliExperiment, QadVsQatGivesMeansIntervalsAndPairedDifferencesAndResumes) {
    const std::string dir = make_temp_dir(), project = dir + "/p.qlab";
    // One replicate: exact match gets its binomial (Wilson) interval, a difference Newcombe's.
    const CliResult one = run_cli(qad_vs_qat(project, 1));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const json j1 = json::parse(one.out);
    EXPECT_EQ(j1["ran_now"], 3);
    ASSERT_EQ(j1["cells"].size(), 3u);
    EXPECT_EQ(j1["cells"][0]["cell"], "method=ptq");
    EXPECT_EQ(j1["cells"][0]["metrics"]["exact_match"]["interval"], "wilson");
    EXPECT_EQ(j1["cells"][0]["metrics"]["kl"]["ci_low"], nullptr);
    EXPECT_EQ(j1["comparisons"][0]["metrics"]["exact_match"]["interval"], "newcombe");

    // A second replicate is added; the first ones are not repeated.
    const CliResult two = run_cli(qad_vs_qat(project, 2));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    const json j = json::parse(two.out);
    EXPECT_EQ(j["ran_now"], 3);
    EXPECT_EQ(j["already_done"], 3);
    EXPECT_EQ(j["planned_runs"], 6);
    EXPECT_EQ(j["completed_runs"], 6);
    std::map<std::string, double> means;
    for (const json& c : j["cells"]) {
        const json& em = c["metrics"]["exact_match"];
        EXPECT_EQ(em["n"], 2) << c["cell"];
        EXPECT_EQ(em["interval"], "t");
        const double mean = em["mean"], lo = em["ci_low"], hi = em["ci_high"];
        const std::vector<double> v = em["values"];
        ASSERT_EQ(v.size(), 2u);
        EXPECT_NEAR(mean, (v[0] + v[1]) / 2, 1e-12);
        // t(0.975, 1) = 12.7062 (scipy): half-width = t · |v0 − v1| / 2 (s/√2 with s = |v0 − v1|/√2).
        EXPECT_NEAR(hi - mean, 12.706204736174694 * std::fabs(v[0] - v[1]) / 2, 1e-9);
        EXPECT_NEAR(mean - lo, hi - mean, 1e-12);
        means[c["cell"]] = mean;
        EXPECT_GT(c["metrics"]["kl"]["mean"].get<double>(), 0.0) << c["cell"];
    }
    ASSERT_EQ(j["comparisons"].size(), 3u);
    const json& d = j["comparisons"][0];
    EXPECT_EQ(d["name"], "QAD − QAT");
    EXPECT_EQ(d["a"], "method=qad");
    EXPECT_EQ(d["b"], "method=qat");
    EXPECT_NEAR(d["metrics"]["exact_match"]["difference"].get<double>(), means["method=qad"] - means["method=qat"], 1e-12);
    EXPECT_EQ(d["metrics"]["exact_match"]["interval"], "paired t");
    EXPECT_LE(d["metrics"]["exact_match"]["ci_low"].get<double>(), d["metrics"]["exact_match"]["difference"].get<double>());

    // The manifest: the environment of each invocation, and per run its seed and hashes.
    ASSERT_EQ(j["manifest"]["invocations"].size(), 2u);
    EXPECT_FALSE(j["manifest"]["invocations"][0]["libtorch"].get<std::string>().empty());
    EXPECT_GE(j["manifest"]["invocations"][0]["threads"].get<int>(), 1);
    ASSERT_EQ(j["manifest"]["runs"].size(), 6u);
    std::set<int64_t> seeds;
    for (const json& r : j["manifest"]["runs"]) {
        seeds.insert(r["seed"].get<int64_t>());
        EXPECT_EQ(r["model_sha256"].get<std::string>().size(), 64u);
        EXPECT_EQ(r["recipe_sha256"].get<std::string>().size(), 64u);
    }
    EXPECT_EQ(seeds, (std::set<int64_t>{0, 1}));

    // Every run is an ordinary project run.
    {
        const projects::ProjectFile p = projects::ProjectFile::open(project, projects::OpenMode::ReadOnly);
        std::multiset<std::string> kinds;
        for (const auto& r : p.runs()) {
            kinds.insert(r.kind);
            EXPECT_EQ(r.status, projects::RunStatus::Completed);
            EXPECT_EQ(json::parse(r.config_json)["experiment"], "qad-vs-qat");
        }
        EXPECT_EQ(kinds, (std::multiset<std::string>{"ptq", "ptq", "qat", "qat", "qad", "qad"}));
        EXPECT_EQ(p.experiments().size(), 1u);
    }

    // Again: nothing left to do. show prints the same result; --against itself moves nothing.
    const CliResult again = run_cli(qad_vs_qat(project, 2));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(json::parse(again.out)["ran_now"], 0);
    const CliResult show = run_cli({"experiment", "show", "qad-vs-qat", "--project", project, "--against", project, "--json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const json s = json::parse(show.out);
    EXPECT_EQ(s["cells"], j["cells"]);
    EXPECT_EQ(s["comparisons"], j["comparisons"]);
    EXPECT_TRUE(s["against"]["moved"].empty());
    const CliResult text = run_cli({"experiment", "show", "qad-vs-qat", "--project", project});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("QAD − QAT"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("manifest: QuantLab"), std::string::npos) << text.out;
    fs::remove_all(dir);
}

TEST_F(CliExperiment, BadExperimentsExitWithOneLineNamingTheFileAndField) {
    const std::string dir = make_temp_dir();
    const CliResult unknown = run_cli({"experiment", "run", "no-such-template", "--project", dir + "/p.qlab"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("qad-vs-qat"), std::string::npos) << unknown.err;  // lists the templates
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "e", "grid": {"method": ["ptq", "kd"]}})";
    const CliResult bad = run_cli({"experiment", "run", dir + "/e.json", "--project", dir + "/p.qlab"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find(dir + "/e.json"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("grid.method[1]"), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(dir + "/p.qlab"));  // nothing was created for a bad experiment
    const CliResult show = run_cli({"experiment", "show", "qad-vs-qat", "--project", dir + "/missing.qlab"});
    EXPECT_EQ(show.exit_code, 1);
    const CliResult templates = run_cli({"experiment", "templates"});
    ASSERT_EQ(templates.exit_code, 0);
    for (const char* name : {"qad-vs-qat", "nvfp4-vs-mxfp4", "bits-frontier", "data-robustness", "cooldown-fusion"})
        EXPECT_NE(templates.out.find(name), std::string::npos) << name;
    const CliResult tpl = run_cli({"experiment", "template", "nvfp4-vs-mxfp4"});
    ASSERT_EQ(tpl.exit_code, 0);
    EXPECT_EQ(json::parse(tpl.out)["name"], "nvfp4-vs-mxfp4");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
