// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli's accuracy levers as users call them on the golden tiny Llama: ptq --kv-cache
// --rotate (report and checkpoint), train qad with a quantized KV cache and a rotation, export
// (fakequant folds, hf-modelopt refuses online rotations and carries k_scale), stats --kv-cache
// records, whatif; and the errors naming option and value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliLevers, PtqWithKvCacheAndRotationReportsAndReloads) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples",
                                 "8", "--kv-cache", "nvfp4", "--rotate", "hadamard", "--out", dir + "/q", "--project",
                                 dir + "/p.qlab", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    EXPECT_EQ(report["recipe"], "NVFP4_DEFAULT-kv_nvfp4-rotate_hadamard");
    const json& kv = report["kv_cache"];
    EXPECT_EQ(kv["quantizer"], "nvfp4 (global amax per tensor)");
    ASSERT_EQ(kv["layers"].size(), 2u);
    for (const json& l : kv["layers"]) {
        ASSERT_EQ(l["key_amax"].size(), 1u);
        EXPECT_FLOAT_EQ(l["key_scale"][0].get<float>(), l["key_amax"][0].get<float>() / 448.0f);
        EXPECT_GT(l["key_sqnr_db"].get<double>(), 10.0);
        EXPECT_GT(l["tokens"].get<int64_t>(), 0);
    }
    // 2 layers x K and V x 4 heads x 16 dims at 4.5 bits, vs 16.
    EXPECT_DOUBLE_EQ(kv["bytes_per_token"].get<double>(), 2 * 2 * 4 * 16 * 4.5 / 8);
    EXPECT_DOUBLE_EQ(kv["fp16_bytes_8k"].get<double>(), 2 * 2 * 4 * 16 * 2.0 * 8192);
    EXPECT_EQ(report["rotation"]["method"], "hadamard (R1 R2 R4)");
    ASSERT_GE(report["rotation"]["notes"].size(), 3u);
    // The checkpoint reloads with the same outputs (eval against the FP model).
    const CliResult e = run_cli({"eval", dir + "/q", "--data", "synthetic:random-tokens", "--teacher", kLlama, "--json"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    EXPECT_GT(json::parse(e.out)["kl"].get<double>(), 0.0);
    // The run records the recipe as applied, overlays included.
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const auto runs = p.runs();
    ASSERT_EQ(runs.size(), 1u);
    const auto recipe = p.recipe(*runs[0].recipe_id);
    EXPECT_EQ(recipe.name, "NVFP4_DEFAULT-kv_nvfp4-rotate_hadamard");
    EXPECT_NE(recipe.json.find("\"kv_cache\""), std::string::npos);
    // Exports: fakequant folds the online rotation; hf-modelopt refuses it, naming the layer.
    const CliResult fq = run_cli({"export", dir + "/q", "--as", "fakequant", "--out", dir + "/fq"});
    EXPECT_EQ(fq.exit_code, 0) << fq.err;
    const CliResult hf = run_cli({"export", dir + "/q", "--as", "hf-modelopt", "--out", dir + "/hf"});
    EXPECT_EQ(hf.exit_code, 1);
    EXPECT_NE(hf.err.find("mlp.down_proj has an online Hadamard rotation"), std::string::npos) << hf.err;
    EXPECT_FALSE(fs::exists(dir + "/hf"));
    const CliResult report_html = run_cli({"export", dir + "/q", "--as", "report", "--out", dir + "/report"});
    ASSERT_EQ(report_html.exit_code, 0) << report_html.err;
    const std::string html = slurp(dir + "/report/report.html");
    EXPECT_NE(html.find("<h2>KV cache</h2>"), std::string::npos);
    EXPECT_NE(html.find("per 8k context"), std::string::npos);
    fs::remove_all(dir);
}

TEST(CliLevers, FusedRotationAndFp8KvCacheExportToHfModelopt) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"ptq", kLlama, "--recipe", "FP8_DEFAULT", "--calib", "synthetic:random-tokens", "--samples",
                                 "8", "--kv-cache", "fp8", "--out", dir + "/q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CliResult hf = run_cli({"export", dir + "/q", "--as", "hf-modelopt", "--out", dir + "/hf"});
    ASSERT_EQ(hf.exit_code, 0) << hf.err;
    const json qc = json::parse(slurp(dir + "/hf/hf_quant_config.json"));
    EXPECT_EQ(qc["quantization"]["kv_cache_quant_algo"], "FP8");
    const json config = json::parse(slurp(dir + "/hf/config.json"));
    EXPECT_EQ(config["quantization_config"]["kv_cache_scheme"], json::parse(R"({"dynamic": false, "num_bits": 8, "type": "float"})"));
    fs::remove_all(dir);
}

TEST(CliLevers, QadTrainsWithAQuantizedKvCacheAndRotation) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"train", "qad", kLlama, "--recipe", "NVFP4_DEFAULT", "--kv-cache", "nvfp4", "--rotate", "rht",
                                 "--data", "synthetic:random-tokens", "--steps", "4", "--batch-size", "4", "--eval-samples", "8",
                                 "--calib-samples", "8", "--lr", "1e-3", "--out", dir + "/t", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json t = json::parse(r.out);
    EXPECT_EQ(t["steps"], 4);
    EXPECT_GT(t["before"]["kl"].get<double>(), 0.0);
    // The trained checkpoint keeps its KV cache and rotation.
    const json marker = json::parse(slurp(dir + "/t/model/quantlab_quant.json"));
    EXPECT_TRUE(marker["rotated"].get<bool>());
    EXPECT_EQ(marker["kv_cache"].size(), 2u);
    const CliResult e = run_cli({"eval", dir + "/t/model", "--data", "synthetic:random-tokens", "--teacher", kLlama, "--json"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    fs::remove_all(dir);
}

TEST(CliLevers, StatsAddKvCacheRecordsWithTheirGrid) {
    const CliResult r = run_cli({"stats", kLlama, "--calib", "synthetic:random-tokens", "--samples", "4", "--kv-cache", "fp8_head",
                                 "--layers", "model.layers.0.self_attn.k_cache,model.layers.0.self_attn.k_cache.head1", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json s = json::parse(r.out);
    ASSERT_EQ(s["layers"].size(), 2u);
    const json& head = s["layers"][1];
    EXPECT_EQ(head["layer"], "model.layers.0.self_attn.k_cache.head1");
    EXPECT_EQ(head["layer_kind"], "kv_cache");
    EXPECT_EQ(head["weight_shape"][1], 16);
    EXPECT_EQ(head["chosen_format"], "fp8_e4m3");
    EXPECT_GT(head["input_amax"].get<double>(), 0.0);
    ASSERT_GE(head["fits"].size(), 2u);
    EXPECT_EQ(head["fits"][0]["format"], "fp8_e4m3");
    EXPECT_FALSE(head["fits"][0]["grid"].empty());
    // The grid's largest value is the calibrated amax: the cache's own clip point.
    EXPECT_NEAR(head["fits"][0]["clip_threshold"].get<double>(), head["input_amax"].get<double>(), 1e-6 * head["input_amax"].get<double>());
}

TEST(CliLevers, WhatIfComparesBeforeAndAfter) {
    const CliResult r = run_cli({"whatif", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples",
                                 "4", "--eval-samples", "4", "--kv-cache", "nvfp4", "--rotate", "hadamard", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json w = json::parse(r.out);
    EXPECT_EQ(w["output_metric"], "kl");
    EXPECT_EQ(w["kv_cache"]["before"], "off");
    EXPECT_EQ(w["kv_cache"]["after"], "nvfp4 (global amax per tensor)");
    EXPECT_EQ(w["tensors"].size(), 14u + 2 * 2);  // every quantized layer's input, K and V of 2 layers
    EXPECT_GT(w["kv_memory_before"]["bytes_per_token"].get<double>(), w["kv_memory_after"]["bytes_per_token"].get<double>());
    for (const json& t : w["tensors"]) {
        EXPECT_EQ(t["histogram_before"]["lo"], t["histogram_after"]["lo"]) << t["name"];
        EXPECT_EQ(t["histogram_before"]["counts"].size(), 96u);
    }
}

TEST(CliLevers, BadLeversAreOneLineErrors) {
    const std::string dir = make_temp_dir();
    const CliResult kv = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--kv-cache",
                                  "fp9", "--out", dir + "/a"});
    EXPECT_EQ(kv.exit_code, 1);
    EXPECT_NE(kv.err.find("--kv-cache: unknown KV-cache format 'fp9'"), std::string::npos) << kv.err;
    const CliResult rot = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--rotate",
                                   "spin", "--out", dir + "/b"});
    EXPECT_EQ(rot.exit_code, 1);
    EXPECT_NE(rot.err.find("--rotate: unknown rotation 'spin'"), std::string::npos) << rot.err;
    std::ofstream(dir + "/r.json") << R"({"quant_cfg": [{"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4"}}],
        "kv_cache": {"format": "int4", "granularity": "group", "group_size": 24}})";
    const CliResult group = run_cli({"ptq", kLlama, "--recipe", dir + "/r.json", "--calib", "synthetic:random-tokens", "--out", dir + "/c"});
    EXPECT_EQ(group.exit_code, 1);
    EXPECT_NE(group.err.find("KV cache"), std::string::npos) << group.err;
    EXPECT_FALSE(fs::exists(dir + "/a") || fs::exists(dir + "/b") || fs::exists(dir + "/c"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
