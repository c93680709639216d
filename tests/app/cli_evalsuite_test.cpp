// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli evalsuite on the real SmolLM2-135M-Instruct (shared/design/REAL_MODEL.md): the FP32
// folder `convert` writes is the baseline; the Q4_1 GGUF file itself (the same function: the folder
// is its decode) and an MXFP4 W4A4 checkpoint of the folder (which does differ) are compared. One
// evaluation of a handful of default-suite items (short answers) is made for the whole suite of
// tests, with logit metrics on real text, CSV tables, saved runs and a project; then
// lm-evaluation-harness 0.4.13 (its HF backend, the peers venv; tests/peers/lm_eval_runner_peer.py)
// answers the items exported with --lm-eval-export on the same FP32 folder and must give the same
// greedy text and the same verdicts. A missing peer or model fails the tests, never skips them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "engine/io/sha256.h"
#include "projects/content_hash.h"
#include "projects/evalsuite_records.h"
#include "tests/app/cli_runner.h"
#include "tests/app/prepared_suite.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Items of the default suite (their max_tokens cut to keep the test short): lm-eval can score
// the numeric and regex ones; the JSON and tool-call items exercise the tools folded into the
// system message and the schema and tool-call tables.
const std::vector<std::pair<std::string, int>> kItems = {
    {"arith-001", 12}, {"arith-020", 12}, {"fact-days-week", 16}, {"fact-gold-symbol", 16}, {"json-001", 40}, {"tool-001", 48}};

class CliEvalsuite : public PreparedSuite<CliEvalsuite> {
    friend class PreparedSuite<CliEvalsuite>;

protected:
    static json& result() { static json r; return r; }
    static std::string& text_out() { static std::string t; return t; }
    static std::string& gguf() { static std::string g; return g; }

private:
    static void prepare() {
        dir() = make_temp_dir();
        const std::string d = dir();
        gguf() = peer_path("QUANTLAB_SMOLLM2_GGUF");
        if (!fs::is_regular_file(gguf())) throw std::runtime_error("the real model is missing: " + gguf() + " (scripts/setup-peers)");
        // The suite: the chosen lines of the default suite, answers cut short.
        std::ifstream in(std::string(QUANTLAB_SOURCE_DIR) + "/resources/evalsuites/default.jsonl");
        std::ofstream suite(d + "/suite.jsonl");
        std::string line;
        size_t found = 0;
        while (std::getline(in, line)) {
            json item = json::parse(line);
            for (const auto& [id, tokens] : kItems)
                if (item["id"] == id) {
                    item["max_tokens"] = tokens;
                    suite << item.dump() << "\n";
                    ++found;
                }
        }
        suite.close();
        if (found != kItems.size()) throw std::runtime_error("the default suite lacks an item of the test");
        // About 6 kB of real text for the logit metrics.
        if (std::system(("'" + std::string(QUANTLAB_SOURCE_DIR) + "/scripts/make-text-corpus' '" + d + "/corpus' >/dev/null").c_str()) != 0)
            throw std::runtime_error("scripts/make-text-corpus failed");
        const std::string eval_text = slurp(d + "/corpus/eval.txt");
        std::ofstream(d + "/text.txt") << eval_text.substr(0, eval_text.find("\n\n", 6000)) << "\n";
        run_cli_ok({"convert", gguf(), "--out", d + "/hf"});
        // The folder is the Q4_1 file decoded (the same function as the GGUF, to rounding): an
        // MXFP4 W4A4 checkpoint of it is the model that differs (RTN; 2 windows of calibration).
        run_cli_ok({"ptq", d + "/hf", "--recipe", "MXFP4", "--calib", d + "/corpus/train.txt", "--samples", "2", "--seq-len", "64", "--out",
             d + "/mxfp4"});
        const std::vector<std::string> common = {"--suite", d + "/suite.jsonl", "--text", d + "/text.txt", "--text-window", "128",
                                                 "--label", "fp32", "--label", "q4_1", "--label", "mxfp4", "--gpu", "H200", "--gpu", "A100"};
        std::vector<std::string> args = {"evalsuite", d + "/hf", gguf(), d + "/mxfp4"};
        args.insert(args.end(), common.begin(), common.end());
        std::vector<std::string> json_args = args;
        json_args.insert(json_args.end(), {"--json", "--csv-dir", d + "/csv", "--save", d + "/saved", "--project", d + "/p.qlab",
                                           "--lm-eval-export", d + "/lmeval"});
        const CliResult r = run_cli_ok(json_args);
        std::ofstream(d + "/result.json") << r.out;
        result() = json::parse(r.out);
        // The text tables, from the saved runs (no generation).
        text_out() = run_cli_ok({"evalsuite", d + "/saved/fp32.json", d + "/saved/q4_1.json", d + "/saved/mxfp4.json", "--suite",
                          d + "/suite.jsonl"}).out;
    }
};

TEST_F(CliEvalsuite, EveryItemIsAnsweredThroughTheChatTemplateWithToolsInTheSystemMessage) {
    const json& runs = result()["runs"];
    ASSERT_EQ(runs.size(), 3u);
    for (const json& run : runs) {
        const json& m = run["manifest"];
        EXPECT_EQ(m["prompt_format"], "chat template");
        EXPECT_EQ(m["tools_mode"], "system message");  // SmolLM2's template ignores tools
        EXPECT_EQ(m["default_system"], "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
        EXPECT_EQ(m["chat_template_sha256"], runs[0]["manifest"]["chat_template_sha256"]);
        EXPECT_EQ(m["decoding"]["description"], "greedy");
        EXPECT_EQ(m["item_ids"].size(), kItems.size());
        ASSERT_EQ(run["replicates"].size(), 1u);
        EXPECT_EQ(run["replicates"][0]["items"].size(), kItems.size());
        for (const json& item : run["replicates"][0]["items"]) EXPECT_GT(item["tokens_generated"].get<int>(), 0) << item["id"];
    }
    // The tool item's conversation: the tools written into the system message after SmolLM2's own.
    const json& prompts = runs[0]["prompts"];
    const json tool = json::parse(prompts[5]["messages"].get<std::string>());
    ASSERT_EQ(tool.size(), 2u);
    EXPECT_EQ(tool[0]["role"], "system");
    EXPECT_EQ(tool[0]["content"].get<std::string>().rfind("You are a helpful AI assistant named SmolLM, trained by Hugging Face\n\n# Tools", 0),
              0u);
    EXPECT_NE(tool[0]["content"].get<std::string>().find("\"name\": \"add_numbers\""), std::string::npos);
    EXPECT_EQ(prompts[0]["user_text"], "What is 6 + 8? Answer with the number only.");
}

TEST_F(CliEvalsuite, TheManifestNamesTheModelsTheirSchemesAndTheSoftware) {
    const json& fp = result()["runs"][0]["manifest"];
    const json& q = result()["runs"][1]["manifest"];
    EXPECT_EQ(fp["label"], "fp32");
    EXPECT_EQ(fp["model_kind"], "hf folder");
    EXPECT_EQ(fp["quant_scheme"], "fp");
    EXPECT_EQ(fp["weight_bits"], 16);
    EXPECT_EQ(fp["model_sha256"], projects::hash_content(dir() + "/hf").sha256);
    EXPECT_EQ(q["model_kind"], "gguf");
    EXPECT_EQ(q["quant_scheme"], "gguf MOSTLY_Q4_1");
    EXPECT_EQ(q["weight_bits"], 4);
    EXPECT_EQ(q["model_sha256"], sha256_file_hex(gguf()));
    EXPECT_NE(q["quant_formats"].get<std::string>().find("gguf_q4_1"), std::string::npos) << q["quant_formats"];
    const json& mx = result()["runs"][2]["manifest"];
    EXPECT_EQ(mx["label"], "mxfp4");
    EXPECT_EQ(mx["model_kind"], "quantized checkpoint");
    EXPECT_EQ(mx["quant_scheme"], "MXFP4");
    EXPECT_EQ(mx["weight_bits"], 4);
    EXPECT_FALSE(mx["recipe_json"].get<std::string>().empty());
    EXPECT_FALSE(fp["quantlab_version"].get<std::string>().empty());
    EXPECT_FALSE(fp["torch_version"].get<std::string>().empty());
}

TEST_F(CliEvalsuite, TablesCountTheItemsAndFlipsAreTheItemsWhoseVerdictsDiffer) {
    const json& tables = result()["tables"];
    const json& items_fp = result()["runs"][0]["replicates"][0]["items"];
    int passed = 0;
    std::set<std::string> flipped;  // "model id direction"
    for (size_t i = 0; i < items_fp.size(); ++i) passed += items_fp[i]["passed"].get<bool>() ? 1 : 0;
    for (size_t r = 1; r < 3; ++r) {
        const json& run = result()["runs"][r];
        const json& items = run["replicates"][0]["items"];
        ASSERT_EQ(items.size(), items_fp.size());
        int model_passed = 0;
        for (size_t i = 0; i < items.size(); ++i) {
            ASSERT_EQ(items[i]["id"], items_fp[i]["id"]);
            model_passed += items[i]["passed"].get<bool>() ? 1 : 0;
            if (items_fp[i]["passed"] != items[i]["passed"])
                flipped.insert(run["manifest"]["label"].get<std::string>() + " " + items[i]["id"].get<std::string>() + " " +
                               (items_fp[i]["passed"].get<bool>() ? "right_to_wrong" : "wrong_to_right"));
        }
        EXPECT_EQ(tables["comparison"]["summaries"][r]["overall"]["successes"], model_passed);
    }
    const json& overall = tables["comparison"]["summaries"][0]["overall"];
    EXPECT_EQ(overall["successes"], passed);
    EXPECT_EQ(overall["trials"], kItems.size());
    EXPECT_EQ(tables["comparison"]["summaries"][0]["json_valid"]["trials"], 1);
    EXPECT_EQ(tables["comparison"]["summaries"][0]["tool_name"]["trials"], 1);
    std::set<std::string> listed;
    for (const json& f : tables["flips"]) {
        listed.insert(f["model"].get<std::string>() + " " + f["id"].get<std::string>() + " " + f["direction"].get<std::string>());
        EXPECT_EQ(f["baseline"], "fp32");
    }
    EXPECT_EQ(listed, flipped);
    const json& checklist = tables["checklist"];
    ASSERT_EQ(checklist.size(), 10u);
    EXPECT_EQ(checklist[3]["item"], "schema validity");
    EXPECT_TRUE(checklist[3]["done"]);
    EXPECT_TRUE(checklist[4]["done"]);  // tool-call accuracy
    EXPECT_FALSE(checklist[1]["done"]);  // no INT8 run
    EXPECT_TRUE(checklist[9]["done"]);   // model id + scheme + version
}

TEST_F(CliEvalsuite, LogitMetricsOnRealTextAreAgainstTheBaseline) {
    const json& fp = result()["runs"][0]["logits"];
    const json& q = result()["runs"][1]["logits"];
    const json& mx = result()["runs"][2]["logits"];
    EXPECT_EQ(fp["windows"], "hf");
    EXPECT_EQ(fp["window"], 128);
    EXPECT_GT(fp["tokens"].get<int>(), 1000);
    EXPECT_TRUE(fp["kl_mean"].is_null());
    EXPECT_EQ(q["reference"], "fp32");
    // The baseline's perplexity as the teacher pass of each run computes it (other batching: float rounding).
    EXPECT_NEAR(q["ppl_reference"].get<double>(), fp["ppl"].get<double>(), 1e-6 * fp["ppl"].get<double>());
    // Δppl: against the baseline run's own perplexity.
    EXPECT_NEAR(q["delta_ppl"].get<double>(), q["ppl"].get<double>() - fp["ppl"].get<double>(), 1e-9);
    // The Q4_1 file and its decoded folder are the same function: no divergence but rounding.
    EXPECT_LT(q["kl_mean"].get<double>(), 1e-6);
    EXPECT_EQ(q["top1_agreement"], 1.0);
    EXPECT_EQ(mx["reference"], "fp32");
    // (to the float rounding of the two perplexities: 2e-5 of 113 measured)
    EXPECT_NEAR(mx["delta_ppl"].get<double>(), mx["ppl"].get<double>() - fp["ppl"].get<double>(), 1e-6 * mx["ppl"].get<double>());
    EXPECT_GT(mx["delta_ppl"].get<double>(), 0.0);
    EXPECT_GT(mx["kl_mean"].get<double>(), 1e-3);
    EXPECT_GT(mx["kl_p99"].get<double>(), mx["kl_mean"].get<double>());
    EXPECT_LT(mx["top1_agreement"].get<double>(), 1.0);
    EXPECT_GT(mx["top1_agreement"].get<double>(), 0.3);
}

TEST_F(CliEvalsuite, ServingCostCountsTheStoredBytesAndEstimatesEachGpu) {
    const json& fp = result()["runs"][0]["cost"];
    const json& q = result()["runs"][1]["cost"];
    const int64_t params = fp["weights"]["parameters"];
    EXPECT_EQ(fp["weights"]["bytes"], 2 * params);  // BF16
    // The GGUF's tensors as stored: all but its header and metadata.
    const int64_t file = static_cast<int64_t>(fs::file_size(gguf()));
    EXPECT_LT(q["weights"]["bytes"].get<int64_t>(), file);
    EXPECT_GT(q["weights"]["bytes"].get<int64_t>(), file - 4 * 1024 * 1024);
    EXPECT_LT(q["weights"]["bits_per_parameter"].get<double>(), 6.0);
    // SmolLM2-135M: 30 layers, 3 KV heads of 64: K and V at 16 bits.
    EXPECT_EQ(fp["kv_cache"]["bytes_per_token"], 30 * 2 * 3 * 64 * 2);
    EXPECT_EQ(fp["kv_cache"]["contexts"][1]["tokens"], 8192);
    ASSERT_EQ(q["estimates"].size(), 2u);
    EXPECT_EQ(q["estimates"][1]["gpu"], "A100");
    EXPECT_DOUBLE_EQ(q["estimates"][0]["bytes_per_token"].get<double>(),
                     q["weights"]["bytes"].get<double>() + 2048.0 * q["kv_cache"]["bytes_per_token"].get<double>());
    EXPECT_DOUBLE_EQ(q["estimates"][0]["decode_tokens_per_second"].get<double>(), 4.8e12 / q["estimates"][0]["bytes_per_token"].get<double>());
    EXPECT_GT(q["estimates"][0]["decode_tokens_per_second"].get<double>(), fp["estimates"][0]["decode_tokens_per_second"].get<double>());
    const json& mx = result()["runs"][2]["cost"];
    EXPECT_GT(mx["weights"]["quantized_parameters"].get<int64_t>(), 0);
    EXPECT_LT(mx["weights"]["bytes"].get<int64_t>(), fp["weights"]["bytes"].get<int64_t>() / 2);
    for (const json* c : {&fp, &q, &mx}) {
        EXPECT_EQ((*c)["measured"]["generations"], kItems.size());
        EXPECT_GT((*c)["measured"]["decode_tokens_per_second"].get<double>(), 0);
        EXPECT_GT((*c)["measured"]["ttft_mean_s"].get<double>(), 0);
    }
}

TEST_F(CliEvalsuite, TextTablesCsvFilesSavedRunsAndTheProjectHoldTheSameRuns) {
    EXPECT_NE(text_out().find("success per category"), std::string::npos) << text_out();
    EXPECT_NE(text_out().find("fp32 (saved run)"), std::string::npos);
    EXPECT_NE(text_out().find("serving cost"), std::string::npos);
    EXPECT_NE(text_out().find("[x] schema validity"), std::string::npos);
    EXPECT_NE(text_out().find("est. H200 t/s"), std::string::npos);
    const std::string summary = slurp(dir() + "/csv/summary.csv");
    EXPECT_EQ(summary.rfind("model,table,name,successes,trials,rate,ci_low,ci_high\n", 0), 0u);
    EXPECT_NE(summary.find("q4_1,category,arithmetic,"), std::string::npos);
    for (const char* f : {"paired.csv", "flips.csv", "flip_outputs.csv", "logits.csv", "cost.csv", "kv_cache.csv", "estimates.csv",
                          "manifest.csv", "checklist.csv", "items_1_fp32.csv", "items_2_q4_1.csv", "items_3_mxfp4.csv"})
        EXPECT_TRUE(fs::is_regular_file(dir() + "/csv/" + f)) << f;
    const std::string flips = slurp(dir() + "/csv/flip_outputs.csv");
    size_t rows = 0;
    for (char c : flips) rows += c == '\n' ? 1 : 0;
    EXPECT_GE(rows, 1 + result()["tables"]["flips"].size());  // outputs may hold line breaks (quoted)

    const std::vector<projects::StoredEvalsuiteRun> stored = projects::stored_evalsuite_runs(dir() + "/p.qlab");
    ASSERT_EQ(stored.size(), 3u);
    EXPECT_EQ(stored[0].name, "fp32");
    EXPECT_EQ(json::parse(stored[1].json)["manifest"]["label"], "q4_1");
    EXPECT_EQ(json::parse(stored[1].json)["replicates"], result()["runs"][1]["replicates"]);

    // A saved run with other settings is refused side by side, and allowed on request.
    json other = json::parse(slurp(dir() + "/saved/q4_1.json"));
    other["manifest"]["decoding"]["max_tokens"] = 64;
    std::ofstream(dir() + "/other.json") << other.dump();
    const CliResult refused =
        run_cli({"evalsuite", dir() + "/saved/fp32.json", dir() + "/other.json", "--suite", dir() + "/suite.jsonl"});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("q4_1 was run with other settings than fp32: decoding.max_tokens: 256 vs 64"), std::string::npos)
        << refused.err;
    const CliResult allowed = run_cli(
        {"evalsuite", dir() + "/saved/fp32.json", dir() + "/other.json", "--suite", dir() + "/suite.jsonl", "--allow-mixed-settings"});
    EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
    EXPECT_NE(allowed.out.find("warning: q4_1 was run with other settings"), std::string::npos);
}

TEST_F(CliEvalsuite, LmEvalHarnessGivesTheSameGreedyAnswersAndScores) {
    // lm-eval scores what its filters and exact_match reproduce: the numeric and regex items.
    EXPECT_TRUE(fs::is_regular_file(dir() + "/lmeval/quantlab_evalsuite.yaml"));
    const std::string log_dir = dir() + "/peer";
    fs::create_directories(log_dir);
    expect_peer_passes(peers_python(), "lm_eval_runner_peer.py",
                       "'" + dir() + "/hf' '" + dir() + "/lmeval' quantlab_evalsuite '" + dir() + "/result.json'", log_dir);
}

TEST(CliEvalsuiteInput, BadArgumentsAreNamed) {
    CliResult r = run_cli({"evalsuite", "demo", "--suite", "/nonexistent.jsonl"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent.jsonl"), std::string::npos) << r.err;
    r = run_cli({"evalsuite", "demo", "--categories", "poetry"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("has no category 'poetry'"), std::string::npos) << r.err;
    r = run_cli({"evalsuite", "demo", "--samples", "3", "--temperature", "0"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("would all be the same"), std::string::npos) << r.err;
    r = run_cli({"evalsuite", "demo", "--gpu", "H300"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("GPU 'H300'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ql::test
