// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli experiment run / show as users call it: the qad-vs-qat template on a demo trained
// for a few steps into the build folder's test cache (as cli_demo_eval_test does), with two
// training steps per run so the whole grid runs in a test.
#include <gtest/gtest.h>


#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"
#include "tests/app/cli_test_demo.h"
#include "tests/demo_suite.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

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

// A recipe that misses its model stops `experiment run` (and --dry-run) before the project is
// created: one line naming the file, the cell, the recipe and the pattern, exit code 1.
TEST_F(CliExperiment, ARecipeThatMissesItsModelExitsBeforeTheFirstRun) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "e",
        "base": {"model": "demo", "method": "ptq", "eval_samples": 8, "calib_samples": 8},
        "grid": {"recipe": ["NVFP4_DEFAULT",
          {"name": "INT8_BERT_FFN", "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
            {"quantizer_name": "*intermediate*weight_quantizer", "cfg": {"format": "int8", "granularity": "channel"}}]}]},
        "metrics": ["kl", "bits_per_parameter"]})";
    for (const bool dry : {true, false}) {
        std::vector<std::string> args{"experiment", "run", dir + "/e.json", "--project", dir + "/p.qlab"};
        if (dry) args.push_back("--dry-run");
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_NE(r.err.find("experiment '" + dir + "/e.json': cell recipe=INT8_BERT_FFN: recipe INT8_BERT_FFN (grid.recipe"),
                  std::string::npos)
            << r.err;
        EXPECT_NE(r.err.find("'*intermediate*weight_quantizer' matches no quantizer of the model"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("run 1/"), std::string::npos) << r.err;  // no run started
        EXPECT_FALSE(fs::exists(dir + "/p.qlab"));
    }
    fs::remove_all(dir);
}

// The MiniLM case that failed at run 3 of its bits frontier: NVFP4_MLP_ONLY's *mlp* patterns
// name no module of a BERT (its FFN is intermediate / output.dense), refused before any run.
TEST_F(CliExperiment, AnMlpOnlyRecipeOnTheRealMiniLmExitsBeforeTheFirstRun) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "e",
        "base": {"model": ")" << minilm_dir() << R"(", "method": "ptq", "data": ")" << dir << R"(/s.txt"},
        "grid": {"recipe": ["FP8_DEFAULT", "NVFP4_DEFAULT", "NVFP4_MLP_ONLY"]},
        "metrics": ["cosine_mean", "bits_per_parameter"]})";
    const CliResult r = run_cli({"experiment", "run", dir + "/e.json", "--project", dir + "/p.qlab"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cell recipe=NVFP4_MLP_ONLY: recipe NVFP4_MLP_ONLY"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("*mlp*"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/p.qlab"));
    fs::remove_all(dir);
}

// The first `lines` sentences of the CMake-manuals corpus (scripts/make-sentence-corpus).
std::string sentence_corpus(const std::string& dir, int lines) {
    const std::string path = dir + "/corpus.txt";
    const std::string command = "'" + std::string(QUANTLAB_SOURCE_DIR) + "/scripts/make-sentence-corpus' '" + path + "' " +
                                std::to_string(lines) + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return path;
}

const json* cell_metric(const json& result, const std::string& cell, const std::string& metric) {
    for (const json& c : result["cells"])
        if (c["cell"] == cell && c["metrics"].contains(metric)) return &c["metrics"][metric];
    return nullptr;
}

// Runs that also answer an eval suite: the FP model's answers are made once and every run is
// paired with them, so success(run) − (wrong→right − right→wrong) / items is the FP model's
// success for every run of every cell.
TEST_F(CliExperiment, RunsAnswerTheEvalSuiteAgainstOneFpBaseline) {
    const std::string dir = make_temp_dir(), project = dir + "/p.qlab";
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "answers", "replicates": 2,
        "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "calib_samples": 32, "eval_samples": 40},
        "grid": {"recipe": ["FP8_DEFAULT", "MXFP4"]},
        "metrics": ["kl"]})";
    std::ofstream(dir + "/demo.jsonl") << kDemoSuite;
    const int items = 4;  // of its 5 add and mul items
    const CliResult r = run_cli({"experiment", "run", dir + "/e.json", "--project", project, "--suite", dir + "/demo.jsonl",
                                 "--suite-categories", "add,mul", "--suite-limit", std::to_string(items), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    std::set<long long> fp_success;  // in items
    for (const char* cell : {"recipe=FP8_DEFAULT", "recipe=MXFP4"}) {
        const json* success = cell_metric(j, cell, "evalsuite/success");
        const json* r2w = cell_metric(j, cell, "evalsuite/right_to_wrong");
        const json* w2r = cell_metric(j, cell, "evalsuite/wrong_to_right");
        ASSERT_TRUE(success && r2w && w2r) << r.out;
        ASSERT_TRUE(cell_metric(j, cell, "evalsuite/success/mul")) << r.out;
        EXPECT_FALSE(cell_metric(j, cell, "evalsuite/success/sub")) << "a category outside the selection";
        EXPECT_FALSE(cell_metric(j, cell, "evalsuite/json_valid")) << "the selection has no JSON items";
        const std::vector<double> s = (*success)["values"], lost = (*r2w)["values"], won = (*w2r)["values"];
        ASSERT_EQ(s.size(), 2u);
        for (std::size_t k = 0; k < s.size(); ++k) {
            EXPECT_LE(lost[k] + won[k], items);
            fp_success.insert(std::llround(s[k] * items - won[k] + lost[k]));
        }
    }
    EXPECT_EQ(fp_success.size(), 1u) << "every run is paired with the same FP answers";
    // One FP baseline file for the experiment; every run keeps its answers.
    int baselines = 0, answers = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir + "/p.experiments")) {
        const std::string name = e.path().filename().string();
        baselines += name.rfind("suite-fp-", 0) == 0 ? 1 : 0;
        answers += name == "evalsuite.json" ? 1 : 0;
    }
    EXPECT_EQ(baselines, 1);
    EXPECT_EQ(answers, 4);

    // Refused before any run: a category the suite lacks, a selection without a suite.
    const CliResult poetry = run_cli({"experiment", "run", dir + "/e.json", "--project", dir + "/q.qlab", "--suite",
                                      dir + "/demo.jsonl", "--suite-categories", "poetry"});
    EXPECT_EQ(poetry.exit_code, 1);
    EXPECT_NE(poetry.err.find("'poetry'"), std::string::npos) << poetry.err;
    const CliResult limit = run_cli({"experiment", "run", dir + "/e.json", "--project", dir + "/q.qlab", "--suite-limit", "3"});
    EXPECT_EQ(limit.exit_code, 1);
    EXPECT_NE(limit.err.find("--suite"), std::string::npos) << limit.err;
    EXPECT_FALSE(fs::exists(dir + "/q.qlab"));
    fs::remove_all(dir);
}

// An encoder experiment on the real all-MiniLM-L6-v2: PTQ with FP8 and NVFP4, one replicate,
// scored by embedding cosine to the FP model on held-out sentences and by the pairs' Spearman.
TEST_F(CliExperiment, EncoderRunsReportEmbeddingCosineAndSpearmanOnTheRealMiniLm) {
    const std::string dir = make_temp_dir(), project = dir + "/p.qlab", corpus = sentence_corpus(dir, 80);
    const std::string pairs = std::string(QUANTLAB_TEST_DATA_DIR) + "/sentences/pairs.tsv";
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "minilm-formats", "replicates": 1,
        "base": {"model": ")" << minilm_dir() << R"(", "method": "ptq", "data": ")" << corpus << R"(",
                 "pairs": ")" << pairs << R"(", "calib_samples": 16},
        "grid": {"recipe": ["FP8_DEFAULT", "NVFP4_DEFAULT"]},
        "metrics": ["cosine_mean", "cosine_p5", "cosine_min", "spearman", "fp_spearman", "bits_per_parameter"],
        "comparisons": [{"a": {"recipe": "FP8_DEFAULT"}, "b": {"recipe": "NVFP4_DEFAULT"}}]})";
    const CliResult r = run_cli({"experiment", "run", dir + "/e.json", "--project", project, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["ran_now"], 2);
    const json* fp8 = cell_metric(j, "recipe=FP8_DEFAULT", "cosine_mean");
    const json* nvfp4 = cell_metric(j, "recipe=NVFP4_DEFAULT", "cosine_mean");
    ASSERT_TRUE(fp8 && nvfp4) << r.out;
    for (const json* m : {fp8, nvfp4}) {
        EXPECT_GT((*m)["mean"].get<double>(), 0.9);
        EXPECT_LE((*m)["mean"].get<double>(), 1.0 + 1e-6);
        EXPECT_EQ((*m)["interval"], "none");  // one replicate of a cosine: no interval
    }
    EXPECT_GT((*fp8)["mean"].get<double>(), (*nvfp4)["mean"].get<double>());
    for (const char* cell : {"recipe=FP8_DEFAULT", "recipe=NVFP4_DEFAULT"}) {
        const json* p5 = cell_metric(j, cell, "cosine_p5");
        const json* min = cell_metric(j, cell, "cosine_min");
        const json* mean = cell_metric(j, cell, "cosine_mean");
        ASSERT_TRUE(p5 && min) << cell;
        EXPECT_LE((*min)["mean"].get<double>(), (*p5)["mean"].get<double>()) << cell;
        EXPECT_LE((*p5)["mean"].get<double>(), (*mean)["mean"].get<double>()) << cell;
        const json* spearman = cell_metric(j, cell, "spearman");
        const json* fp_spearman = cell_metric(j, cell, "fp_spearman");
        ASSERT_TRUE(spearman && fp_spearman) << cell;
        // The FP model ranks the hand-scored pairs well (0.86, cli_encoder_test); quantized close to it.
        EXPECT_GT((*fp_spearman)["mean"].get<double>(), 0.8) << cell;
        EXPECT_NEAR((*spearman)["mean"].get<double>(), (*fp_spearman)["mean"].get<double>(), 0.1) << cell;
        EXPECT_GT(cell_metric(j, cell, "bits_per_parameter")->at("mean").get<double>(), 10.0) << cell;  // 16-bit embeddings
    }
    ASSERT_EQ(j["comparisons"].size(), 1u);
    EXPECT_GT(j["comparisons"][0]["metrics"]["cosine_mean"]["difference"].get<double>(), 0.0);

    // A template on the encoder takes its encoder form: qad-vs-qat is PTQ vs QAD vs QAT (QAT on
    // the encoder's contrastive loss), scored by cosine and the held-out contrastive loss; two
    // training steps.
    const CliResult q = run_cli({"experiment", "run", "qad-vs-qat", "--model", minilm_dir(), "--data", corpus, "--project",
                                 dir + "/q.qlab", "--replicates", "1", "--steps", "2", "--json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const json qj = json::parse(q.out);
    ASSERT_EQ(qj["cells"].size(), 3u);
    EXPECT_EQ(qj["metrics"], json::array({"cosine_mean", "cosine_p5", "cosine_min", "contrastive_loss"}));
    for (const char* cell : {"method=ptq", "method=qad", "method=qat"}) {
        const json* m = cell_metric(qj, cell, "cosine_mean");
        ASSERT_TRUE(m) << cell << q.out;
        EXPECT_GT((*m)["mean"].get<double>(), 0.9) << cell;
        EXPECT_LE((*m)["mean"].get<double>(), 1.0 + 1e-6) << cell;
        // Each of the 8 held-out sentences against the deletion views of all 8: between a
        // perfect match (0) and chance (ln 8).
        const json* loss = cell_metric(qj, cell, "contrastive_loss");
        ASSERT_TRUE(loss) << cell;
        EXPECT_GT((*loss)["mean"].get<double>(), 0.0) << cell;
        EXPECT_LT((*loss)["mean"].get<double>(), std::log(8.0)) << cell;
    }
    ASSERT_EQ(qj["comparisons"].size(), 3u);
    EXPECT_EQ(qj["comparisons"][0]["name"], "QAD − QAT");
    // Every template has an encoder form now; data-robustness trains on the sentences, their
    // first third and random sentences (checked against the model, nothing run).
    const CliResult robust = run_cli({"experiment", "run", "data-robustness", "--model", minilm_dir(), "--data", corpus,
                                      "--project", dir + "/r.qlab", "--dry-run"});
    ASSERT_EQ(robust.exit_code, 0) << robust.err;
    EXPECT_NE(robust.out.find(corpus + "#lines=1-26"), std::string::npos) << robust.out;
    EXPECT_NE(robust.out.find("synthetic:random-tokens"), std::string::npos) << robust.out;
    const CliResult no_data = run_cli({"experiment", "run", "qad-vs-qat", "--model", minilm_dir(), "--project", dir + "/q.qlab"});
    EXPECT_EQ(no_data.exit_code, 1);
    EXPECT_NE(no_data.err.find("--data"), std::string::npos) << no_data.err;

    // Decoder metrics asked of the encoder: one line naming the file and field, before any run.
    std::ofstream(dir + "/bad.json") << R"({"quantlab_experiment": 1, "name": "bad", "base": {"model": ")" << minilm_dir()
                                      << R"(", "data": ")" << corpus << R"("}, "metrics": ["cosine_mean", "exact_match"]})";
    const CliResult bad = run_cli({"experiment", "run", dir + "/bad.json", "--project", dir + "/bad.qlab"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find(dir + "/bad.json"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("metrics[1]"), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(dir + "/bad.qlab"));
    fs::remove_all(dir);
}

// Every template's decoder form on the real SmolLM2-135M-Instruct and text (docs/EXPERIMENTS.md
// "Language models"): planned and checked against the model (each recipe planned on its layers,
// 576-wide rows included), nothing run; docs/RESULTS.md has the measured runs.
TEST_F(CliExperiment, EveryTemplatePlansItsDecoderFormOnTheRealSmolLm2) {
    const std::string dir = make_temp_dir(), gguf = peer_path("QUANTLAB_SMOLLM2_GGUF");
    {
        std::ofstream text(dir + "/train.txt");
        for (int i = 0; i < 45; ++i) text << "Paragraph " << i << " of the manual says what the program does.\n\n";
    }
    std::ofstream(dir + "/eval.txt") << "Held-out prose of another manual.\n";
    const std::map<std::string, std::size_t> runs = {{"qad-vs-qat", 6}, {"nvfp4-vs-mxfp4", 15}, {"bits-frontier", 22},
                                                     {"data-robustness", 12}, {"cooldown-fusion", 8}, {"qat-fraction", 12}};
    for (const auto& [name, count] : runs) {
        const CliResult r = run_cli({"experiment", "run", name, "--model", gguf, "--data", dir + "/train.txt", "--eval-data",
                                     dir + "/eval.txt", "--project", dir + "/p.qlab", "--dry-run"});
        ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
        EXPECT_NE(r.err.find(std::to_string(count) + " runs planned"), std::string::npos) << name << ": " << r.err;
        if (name == "data-robustness") EXPECT_NE(r.out.find(dir + "/train.txt#lines=1-30,method=qad"), std::string::npos) << r.out;
        if (name == "bits-frontier") EXPECT_NE(r.out.find("bits=8.5,menu=NVFP4+FP8+BF16,method=mixed"), std::string::npos) << r.out;
    }
    EXPECT_FALSE(fs::exists(dir + "/p.qlab"));  // a dry run creates nothing
    fs::remove_all(dir);
}

// A mixed-precision run on the demo: the search's plan stays within the budget in bits per
// parameter, mixes formats, and is the run's recipe in the project.
TEST_F(CliExperiment, MixedRunsStayWithinTheirBudgetAndRecordThePerLayerPlan) {
    const std::string dir = make_temp_dir(), project = dir + "/p.qlab";
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "mixed", "replicates": 1,
        "base": {"model": "demo", "method": "mixed", "data": "synthetic:arith", "calib_samples": 32, "eval_samples": 40},
        "grid": {"bits": [6]},
        "metrics": ["kl", "exact_match", "bits_per_parameter"]})";
    const CliResult r = run_cli({"experiment", "run", dir + "/e.json", "--project", project, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    const json* bits = cell_metric(j, "bits=6", "bits_per_parameter");
    ASSERT_TRUE(bits) << r.out;
    EXPECT_LE((*bits)["mean"].get<double>(), 6.0);
    EXPECT_GT((*bits)["mean"].get<double>(), 4.0);
    ASSERT_TRUE(cell_metric(j, "bits=6", "kl"));
    const projects::ProjectFile p = projects::ProjectFile::open(project, projects::OpenMode::ReadOnly);
    ASSERT_EQ(p.runs().size(), 1u);
    const projects::RunRecord run = p.runs()[0];
    EXPECT_EQ(run.kind, "mixed");
    ASSERT_TRUE(run.recipe_id.has_value());
    const projects::RecipeRecord recipe = p.recipe(*run.recipe_id);
    EXPECT_EQ(recipe.name.rfind("MIXED_6B_NVFP4+FP8+BF16", 0), 0u) << recipe.name;
    std::set<std::string> formats;
    const json plan = json::parse(recipe.json);
    for (const json& entry : plan["quant_cfg"]) {
        const std::string name = entry["quantizer_name"];
        if (name.size() > 17 && name.substr(name.size() - 17) == ".weight_quantizer" && entry.contains("cfg"))
            formats.insert(entry["cfg"]["format"].get<std::string>());
    }
    // Between NVFP4 (4.5 bits per weight) and FP8 (8): both, layer by layer.
    EXPECT_EQ(formats, (std::set<std::string>{"nvfp4", "fp8_e4m3"})) << recipe.json;

    // The plan as compressed-tensors config_groups (recipe export --run): every planned layer in
    // the group of its format, with the same module name.
    const CliResult ct = run_cli({"recipe", "export", "--run", std::to_string(run.id), "--project", project, "--as",
                                  "compressed-tensors", "--out", dir + "/qc.json", "--json"});
    ASSERT_EQ(ct.exit_code, 0) << ct.err;
    std::map<std::string, std::string> planned, exported;  // layer -> weight format
    for (const json& entry : plan["quant_cfg"]) {
        const std::string name = entry["quantizer_name"];
        if (name.size() > 17 && name.substr(name.size() - 17) == ".weight_quantizer" && entry.contains("cfg"))
            planned[name.substr(0, name.size() - 17)] = entry["cfg"]["format"];
    }
    const json qc = json::parse(slurp(dir + "/qc.json"));
    for (const auto& [group, g] : qc["config_groups"].items())
        for (const json& t : g["targets"]) exported[t.get<std::string>()] = g["format"].get<std::string>();
    ASSERT_EQ(exported.size(), planned.size()) << qc.dump();
    for (const auto& [layer, format] : planned)
        EXPECT_EQ(exported[layer], format == "nvfp4" ? "nvfp4-pack-quantized" : "float-quantized") << layer;
    EXPECT_EQ(json::parse(ct.out)["quantized_layers"], planned.size());
    // The plan as a Model Optimizer config: each planned layer's weight quantizer with its
    // format's num_bits (NVFP4 E2M1 blocks of 16 with E4M3 scales, FP8 E4M3 per tensor).
    const CliResult mo = run_cli({"recipe", "export", "--run", std::to_string(run.id), "--project", project, "--as", "modelopt",
                                  "--out", dir + "/mo.json", "--json"});
    ASSERT_EQ(mo.exit_code, 0) << mo.err;
    const json mcfg = json::parse(slurp(dir + "/mo.json"));
    std::map<std::string, json> mo_weights;
    for (const json& e : mcfg["quant_cfg"])
        if (e.contains("cfg")) mo_weights[e["quantizer_name"].get<std::string>()] = e["cfg"];
    for (const auto& [layer, format] : planned) {
        const auto it = mo_weights.find("*" + layer + ".weight_quantizer");
        ASSERT_NE(it, mo_weights.end()) << layer << mcfg.dump();
        EXPECT_EQ(it->second["num_bits"], format == "nvfp4" ? json({2, 1}) : json({4, 3})) << layer;
        if (format == "nvfp4") EXPECT_EQ(it->second["block_sizes"]["-1"], 16) << layer;
        else EXPECT_TRUE(it->second["axis"].is_null()) << layer;
    }
    EXPECT_EQ(json::parse(mo.out)["quantized_layers"], planned.size());
    // Model Optimizer itself (mtq.quantize on the demo as an HF model, a few calibration batches)
    // gives every Linear the quantizers of the run's recorded plan, the BF16 ones none
    // (tests/peers/modelopt_plan_peer.py; fails when the peers venv is missing).
    const std::string peer_case = dir + "/mo-peer";
    fs::create_directories(peer_case);
    fs::copy_file(dir + "/mo.json", peer_case + "/plan.json");
    std::ofstream(peer_case + "/expected.json") << json({{"model", cli_test_demo_dir()}, {"arch", "llama"}, {"recipe", plan}}).dump();
    const PeerOutput peer = run_peer_script(peers_python(), "modelopt_plan_peer.py", "'" + peer_case + "'", dir);
    EXPECT_EQ(peer.status, 0) << peer.output;
    EXPECT_NE(peer.output.find("; 0 mismatch(es)\nPASS"), std::string::npos) << peer.output;
    // llama.cpp has no NVFP4 / FP8 type: refused, naming a layer.
    const CliResult llama = run_cli({"recipe", "export", "--run", std::to_string(run.id), "--project", project, "--as",
                                     "llama-tensor-types"});
    EXPECT_EQ(llama.exit_code, 1);
    EXPECT_NE(llama.err.find("llama tensor types: layer "), std::string::npos) << llama.err;
    const CliResult other = run_cli({"recipe", "export", "--run", std::to_string(run.id), "--project", project, "--as", "gguf"});
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_NE(other.err.find("compressed-tensors"), std::string::npos) << other.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
