// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli export --as compressed-tensors and quantlab-cli doctor on a PTQ checkpoint of the
// golden tiny Llama: the export's JSON carries the doctor's report, `doctor --json` follows the
// contract of docs/CLI.md, exit 1 for an artifact with errors, an unfused NVFP4 export refused
// with the layers named, and one-line errors for a missing path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliDoctor, ExportsCarryTheReportAndDoctorExitsOneOnErrors) {
    const std::string dir = make_temp_dir();
    ASSERT_EQ(run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens", "--samples", "8", "--out",
                       dir + "/q"})
                  .exit_code,
              0);
    const CliResult ex = run_cli({"export", dir + "/q", "--as", "compressed-tensors", "--out", dir + "/ct", "--json"});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    const json r = json::parse(ex.out);
    EXPECT_EQ(r["as"], "compressed-tensors");
    EXPECT_EQ(r["doctor"]["layout"], "compressed-tensors");
    EXPECT_EQ(r["doctor"]["ok"], true);
    EXPECT_EQ(r["doctor"]["errors"], 0);
    EXPECT_EQ(r["doctor"]["layers"], 14);
    EXPECT_TRUE(fs::exists(dir + "/ct/quantlab_export.json"));

    const CliResult d = run_cli({"doctor", dir + "/ct", "--json"});
    EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
    const json j = json::parse(d.out);
    for (const char* key : {"path", "layout", "consumer", "ok", "errors", "warnings", "layers", "checks", "findings"})
        EXPECT_TRUE(j.contains(key)) << key;
    ASSERT_TRUE(j["checks"].is_array());
    for (const json& c : j["checks"])
        for (const char* key : {"id", "title", "ran", "note"}) EXPECT_TRUE(c.contains(key)) << key;
    const CliResult text = run_cli({"doctor", dir + "/ct"});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.out.find("check        reproduces-quantlab  ran"), std::string::npos) << text.out;

    // Break it: a truncated shard.
    fs::resize_file(dir + "/ct/model.safetensors", 1000);
    const CliResult bad = run_cli({"doctor", dir + "/ct", "--json"});
    EXPECT_EQ(bad.exit_code, 1);
    const json b = json::parse(bad.out);
    EXPECT_EQ(b["ok"], false);
    EXPECT_EQ(b["findings"][0]["severity"], "error");
    EXPECT_EQ(b["findings"][0]["check"], "files");

    const CliResult missing = run_cli({"doctor", dir + "/nope"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find(dir + "/nope does not exist"), std::string::npos) << missing.err;
    fs::remove_all(dir);
}

TEST(CliDoctor, AnUnfusedNvfp4ExportIsRefusedNamingTheLayers) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/r.json") << R"({"algorithm": "max", "calibration": {"samples": 8}, "quant_cfg": [
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
    ASSERT_EQ(run_cli({"ptq", kLlama, "--recipe", dir + "/r.json", "--calib", "synthetic:random-tokens", "--out", dir + "/q"}).exit_code, 0);
    const CliResult ex = run_cli({"export", dir + "/q", "--as", "compressed-tensors", "--out", dir + "/ct"});
    EXPECT_EQ(ex.exit_code, 1);
    EXPECT_NE(ex.err.find("the Export Doctor found"), std::string::npos) << ex.err;
    EXPECT_NE(ex.err.find("model.layers.0.self_attn.q_proj"), std::string::npos) << ex.err;
    EXPECT_NE(ex.err.find("share_fused_scales"), std::string::npos) << ex.err;
    EXPECT_FALSE(fs::exists(dir + "/ct"));
    EXPECT_FALSE(fs::exists(dir + "/ct.partial"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
