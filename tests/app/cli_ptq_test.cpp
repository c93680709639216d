// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli ptq / sensitivity on the golden tiny Llama, as users call them; the checkpoint is
// read back by eval, the run recorded in a project file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliPtq, QuantizesWritesACheckpointThatEvalReadsAndRecordsTheRun) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"ptq", kLlama, "--recipe", "nvfp4_default", "--calib", "synthetic:random-tokens",
                                 "--samples", "16", "--out", dir + "/q", "--project", dir + "/p.qlab", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A decoder on token data runs layer by layer: progress by block (2 blocks and the rest),
    // with the memory lane, not in thousandths of a block.
    EXPECT_NE(r.err.find("[ptq] block 1/3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[ptq] block 3/3 100%"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("RSS "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("/3000"), std::string::npos) << r.err;
    const json report = json::parse(r.out);
    EXPECT_EQ(report["recipe"], "NVFP4_DEFAULT");
    EXPECT_EQ(report["calibration_examples"], 16);
    ASSERT_EQ(report["layers"].size(), 14u);
    for (const json& l : report["layers"]) {
        EXPECT_EQ(l["weight_quantizer"], "nvfp4");
        EXPECT_EQ(l["input_quantizer"], "nvfp4 static (max)");
        EXPECT_GT(l["output_sqnr_db"].get<double>(), 5.0) << l["layer"];
        EXPECT_GT(l["input_amax"].get<double>(), 0.0);
    }
    EXPECT_EQ(json::parse(slurp(dir + "/q/ptq_report.json")), report);
    EXPECT_TRUE(fs::exists(dir + "/q/ptq_report.csv"));

    // eval reads the folder as the quantized model: its outputs differ from the FP model's.
    const CliResult fp = run_cli({"eval", kLlama, "--data", "synthetic:random-tokens", "--json"});
    const CliResult q = run_cli({"eval", dir + "/q", "--data", "synthetic:random-tokens", "--teacher", kLlama, "--json"});
    ASSERT_EQ(fp.exit_code, 0) << fp.err;
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_NE(json::parse(fp.out)["loss"], json::parse(q.out)["loss"]);
    EXPECT_GT(json::parse(q.out)["kl"].get<double>(), 0.0);

    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const auto runs = p.runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].kind, "ptq");
    EXPECT_EQ(runs[0].status, projects::RunStatus::Completed);
    // The model and the recipe as applied are recorded with the run.
    ASSERT_TRUE(runs[0].model_id.has_value());
    ASSERT_TRUE(runs[0].recipe_id.has_value());
    EXPECT_EQ(p.recipe(*runs[0].recipe_id).name, "NVFP4_DEFAULT");
    EXPECT_EQ(p.model(*runs[0].model_id).name, kLlama);
    const auto stats = p.layer_stats(runs[0].id, std::string("model.layers.0.mlp.up_proj"));
    bool found = false;
    for (const auto& s : stats)
        if (s.kind == "output_sqnr_db") {
            found = true;
            ASSERT_EQ(s.values.size(), 1u);
            EXPECT_GT(s.values[0], 5.0f);
        }
    EXPECT_TRUE(found);
    EXPECT_EQ(p.artifacts(runs[0].id).size(), 1u);

    // The same output again needs --force.
    const CliResult again = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens",
                                     "--samples", "16", "--out", dir + "/q"});
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
    fs::remove_all(dir);
}

TEST(CliPtq, EvalDataRecordsTheQuantizedModelsAccuracyAgainstTheFpModel) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples",
                                 "16", "--out", dir + "/q", "--eval-data", "synthetic:random-tokens", "--project", dir + "/p.qlab"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The same numbers as `eval` of the checkpoint against the FP teacher.
    const CliResult q = run_cli({"eval", dir + "/q", "--data", "synthetic:random-tokens", "--split", "validation", "--teacher",
                                 kLlama, "--json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const int64_t run = p.runs().at(0).id;
    const auto kl = p.load_series(run, "eval/kl");
    ASSERT_EQ(kl.size(), 1u);
    EXPECT_DOUBLE_EQ(kl.values[0], json::parse(q.out)["kl"].get<double>());
    EXPECT_EQ(p.load_series(run, "eval/loss").size(), 1u);
    EXPECT_EQ(p.load_series(run, "model/bits_per_parameter").size(), 1u);

    const CliResult noOut = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens",
                                     "--eval-data", "synthetic:random-tokens"});
    EXPECT_EQ(noOut.exit_code, 1);
    EXPECT_NE(noOut.err.find("--eval-data needs --out"), std::string::npos) << noOut.err;
    fs::remove_all(dir);
}

// The tiny Llama's rows (64 inputs, 96 for down_proj) are not a multiple of Q4_K's 256: as
// llama-quantize does, those tensors get Q5_0, and inspect says why on each layer.
TEST(CliPtq, AKQuantPresetOnRowsItsBlocksDoNotTileTakesLlamaCppsFallbackType) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"ptq", kLlama, "--recipe", "GGUF_Q4_K", "--calib", "synthetic:random-tokens", "--samples", "4",
                                 "--out", dir + "/q", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    ASSERT_EQ(report["layers"].size(), 14u);
    for (const json& l : report["layers"]) EXPECT_EQ(l["weight_quantizer"], "gguf_q5_0") << l["layer"];
    const CliResult ins = run_cli({"inspect", dir + "/q", "--json"});
    ASSERT_EQ(ins.exit_code, 0) << ins.err;
    const json inspected = json::parse(ins.out);
    int fallbacks = 0;
    for (const json& l : inspected["layers"]) {
        if (l["weight_format"] != "gguf_q5_0") continue;
        ++fallbacks;
        const std::string rows = std::to_string(l["weight_shape"][1].get<int64_t>());
        EXPECT_EQ(l["weight_fallback"], "llama.cpp's fallback for gguf_q4_k: rows of " + rows + " are not a multiple of 256") << l["name"];
    }
    EXPECT_EQ(fallbacks, 14);
    fs::remove_all(dir);
}

TEST(CliPtq, BadRecipesFailWithOneLineNamingTheField) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/bad.json") << R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 128}}]})";
    const CliResult group = run_cli({"ptq", kLlama, "--recipe", dir + "/bad.json", "--calib", "synthetic:random-tokens", "--out", dir + "/q"});
    EXPECT_EQ(group.exit_code, 1);
    EXPECT_NE(group.err.find("group size 128 is longer than the last dimension"), std::string::npos) << group.err;
    EXPECT_FALSE(fs::exists(dir + "/q"));
    const CliResult unknown = run_cli({"ptq", kLlama, "--recipe", "FP9_DEFAULT", "--calib", "synthetic:random-tokens"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("neither a preset"), std::string::npos) << unknown.err;
    std::ofstream(dir + "/nomatch.json") << R"({"quant_cfg": [{"quantizer_name": "*c_attn*", "cfg": {"format": "int8"}}]})";
    const CliResult none = run_cli({"ptq", kLlama, "--recipe", dir + "/nomatch.json", "--calib", "synthetic:random-tokens"});
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.err.find("matches no quantizer"), std::string::npos) << none.err;
    fs::remove_all(dir);
}

TEST(CliPtq, BadCountsAndSeedsFailNamingTheCommandAndOption) {
    // Checked while parsing, before the model is opened.
    const std::vector<std::string> model{kLlama, "--recipe", "nvfp4_default", "--calib", "synthetic:random-tokens"};
    auto error = [&](const std::string& command, std::vector<std::string> extra) {
        std::vector<std::string> args{command};
        args.insert(args.end(), model.begin(), model.end());
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.err;
        return r.err;
    };
    EXPECT_NE(error("ptq", {"--samples", "0"}).find("ptq: --samples must be a positive integer"), std::string::npos);
    EXPECT_NE(error("ptq", {"--batch-size", "-2"}).find("ptq: --batch-size must be a positive integer"), std::string::npos);
    EXPECT_NE(error("ptq", {"--seed", "-1"}).find("ptq: --seed must not be negative"), std::string::npos);
    EXPECT_NE(error("sensitivity", {"--seed", "-1"}).find("sensitivity: --seed must not be negative"), std::string::npos);
}

TEST(CliSensitivity, RanksLayersAndSearchesAMixedRecipeWithinTheBudget) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"sensitivity", kLlama, "--recipe", "NVFP4_DEFAULT,FP8_DEFAULT", "--calib",
                                 "synthetic:random-tokens", "--samples", "16", "--eval-samples", "16", "--bits", "6",
                                 "--out-recipe", dir + "/mixed.json", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    ASSERT_EQ(j["layers"].size(), 14u);
    for (const json& l : j["layers"]) {
        EXPECT_GE(l["kl"][0].get<double>(), 0.0);
        EXPECT_GE(l["kl"][1].get<double>(), 0.0);
    }
    // FP8 (8 bits + one F32 scale) costs less KL than NVFP4 (4.5 bits) overall.
    EXPECT_LT(j["all_quantized_kl"][1].get<double>(), j["all_quantized_kl"][0].get<double>());
    EXPECT_LE(j["mixed"]["bits_per_weight"].get<double>(), 6.0);
    EXPECT_GT(j["mixed"]["bits_per_weight"].get<double>(), 4.5);
    // The mixed model lies between the two uniform ones.
    EXPECT_LT(j["mixed"]["kl"].get<double>(), j["all_quantized_kl"][0].get<double>());
    // Fused q/k/v and gate/up take one format per group (vLLM runs each group as one matmul), and
    // the recipe keeps the presets' shared fused scales.
    std::map<std::string, std::string> chosen;
    for (const json& l : j["layers"]) chosen[l["layer"].get<std::string>()] = l["chosen"].get<std::string>();
    for (const char* block : {"model.layers.0.", "model.layers.1."}) {
        const std::string b = block;
        EXPECT_EQ(chosen.at(b + "self_attn.k_proj"), chosen.at(b + "self_attn.q_proj")) << b;
        EXPECT_EQ(chosen.at(b + "self_attn.v_proj"), chosen.at(b + "self_attn.q_proj")) << b;
        EXPECT_EQ(chosen.at(b + "mlp.up_proj"), chosen.at(b + "mlp.gate_proj")) << b;
    }
    EXPECT_EQ(json::parse(slurp(dir + "/mixed.json")).value("share_fused_scales", false), true);
    const CliResult q = run_cli({"ptq", kLlama, "--recipe", dir + "/mixed.json", "--calib", "synthetic:random-tokens",
                                 "--samples", "16", "--json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
