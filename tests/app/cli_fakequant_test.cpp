// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/api/fake_quant_api.h"
#include "engine/io/npy_file.h"
#include "tests/app/cli_runner.h"

namespace ql {
namespace {

using test::run_cli;

struct CliFiles : ::testing::Test {
    std::string dir = test::make_temp_dir();
    std::string in = dir + "/x.npy";
    NdArray x;
    void SetUp() override {
        std::vector<float> v(4 * 64);
        for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + (i % 7));
        x = NdArray::from_floats(v, {4, 64});
        write_npy(in, x);
    }
};

TEST_F(CliFiles, FormatsJsonListsEveryContractFormat) {
    const auto r = run_cli({"formats", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::set<std::string> names;
    for (const auto& f : j) names.insert(f["name"].get<std::string>());
    for (const char* n : {"fp8_e4m3", "fp8_e5m2", "nvfp4", "nvfp4_e5m3", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4",
                          "mxint8", "int8", "int4", "int3", "int2", "nf4", "gguf_q8_0", "gguf_q4_0", "gguf_q4_1",
                          "gguf_q5_0", "gguf_mxfp4", "gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq2_s", "gguf_iq3_xxs",
                          "gguf_iq3_s", "gguf_iq1_s", "gguf_iq1_m", "gguf_tq1_0", "gguf_tq2_0"})
        EXPECT_TRUE(names.count(n)) << n;
    for (const auto& f : j)
        EXPECT_EQ(f["requires_importance"].get<bool>(),
                  f["name"] == "gguf_iq2_xxs" || f["name"] == "gguf_iq2_xs" || f["name"] == "gguf_iq1_s")
            << f["name"];
    const auto plain = run_cli({"formats"});
    EXPECT_EQ(plain.exit_code, 0);
    EXPECT_NE(plain.out.find("nvfp4"), std::string::npos);
}

TEST_F(CliFiles, IQuantsThatGgmlQuantizesOnlyWithAnImatrixNeedImportance) {
    // 4 rows of 256: one super-block each.
    std::vector<float> v(4 * 256);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + (i % 7));
    write_npy(in, NdArray::from_floats(v, {4, 256}));
    const auto r = run_cli({"fakequant", "--format", "gguf_iq2_xxs", "--in", in, "--out", dir + "/y.npy"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("ggml_quantize_requires_imatrix"), std::string::npos) << r.err;
    write_npy(dir + "/imp.npy", NdArray::from_floats(std::vector<float>(256, 1.0f), {256}));
    const auto ok = run_cli({"fakequant", "--format", "gguf_iq2_xxs", "--in", in, "--out", dir + "/y.npy", "--importance",
                             dir + "/imp.npy", "--packed", dir + "/p.npy"});
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_EQ(read_npy(dir + "/p.npy").shape, (std::vector<int64_t>{4, 66}));
    // IQ1_M works without importance (ggml quantizes it with x^2 weights).
    EXPECT_EQ(run_cli({"fakequant", "--format", "gguf_iq1_m", "--in", in, "--out", dir + "/y.npy"}).exit_code, 0);
}

TEST_F(CliFiles, FakequantWritesWhatTheEngineComputes) {
    const auto r = run_cli({"fakequant", "--format", "nvfp4", "--in", in, "--out", dir + "/y.npy", "--codes",
                            dir + "/c.npy", "--scales", dir + "/s.npy", "--packed", dir + "/p.npy", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    FakeQuantRequest req;
    req.input = x;
    req.options.format = "nvfp4";
    req.want_codes = req.want_scales = req.want_packed = true;
    const auto want = run_fake_quant(req);
    EXPECT_EQ(read_npy(dir + "/y.npy").bytes, want.values.bytes);
    EXPECT_EQ(read_npy(dir + "/c.npy").bytes, want.codes->bytes);
    EXPECT_EQ(read_npy(dir + "/s.npy").bytes, want.scales->bytes);
    const NdArray p = read_npy(dir + "/p.npy");
    EXPECT_EQ(p.shape, (std::vector<int64_t>{4, 32}));
    EXPECT_EQ(p.bytes, want.packed->bytes);
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["format"], "nvfp4");
    EXPECT_EQ(j["global_scale"].get<float>(), *want.global_scale);
    EXPECT_EQ(j["block_size"], 16);
}

TEST_F(CliFiles, IntegerOptionsReachTheEngine) {
    const auto r = run_cli({"fakequant", "--format", "int4", "--granularity", "group", "--group-size", "32", "--asym",
                            "--in", in, "--out", dir + "/y.npy", "--codes", dir + "/c.npy", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["zero_points"].size(), 8u);  // 4 rows x 2 groups
    EXPECT_EQ(read_npy(dir + "/c.npy").dtype, DType::UInt8);
    const auto s = run_cli({"fakequant", "--format", "int4", "--in", in, "--out", dir + "/y.npy", "--codes", dir + "/c.npy"});
    ASSERT_EQ(s.exit_code, 0);
    EXPECT_EQ(read_npy(dir + "/c.npy").dtype, DType::Int8);  // symmetric codes are signed
}

TEST_F(CliFiles, BadInputGivesOneLineAndExitCodeOne) {
    write_npy(dir + "/ints.npy", NdArray::zeros(DType::Int32, {4}));
    { std::ofstream(dir + "/text.npy") << "hello"; }
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"fakequant", "--format", "nvfp5", "--in", in, "--out", dir + "/y.npy"}, "unknown format 'nvfp5'"},
        {{"fakequant", "--format", "int4", "--in", dir + "/ints.npy", "--out", dir + "/y.npy"}, "expected a float32 array"},
        {{"fakequant", "--format", "int4", "--in", dir + "/text.npy", "--out", dir + "/y.npy"}, "not a valid .npy file"},
        {{"fakequant", "--format", "int4", "--in", dir + "/missing.npy", "--out", dir + "/y.npy"}, "cannot open"},
        {{"fakequant", "--format", "int4", "--granularity", "group", "--group-size", "96", "--in", in, "--out", dir + "/y.npy"},
         "group size 96 is longer than the last dimension (64)"},
        {{"fakequant", "--format", "int4", "--frobnicate", "--in", in, "--out", dir + "/y.npy"}, "unknown option --frobnicate"},
        {{"fakequant", "--format", "int4", "--in", in}, "missing required option --out"},
        {{"fakequant", "--format", "int4", "--group-size", "x", "--in", in, "--out", dir + "/y.npy"}, "expects an integer"},
        {{"fakequant", "--format", "gguf_q4_0", "--in", in, "--out", dir + "/y.npy", "--mx-scale", "rceil"}, "--mx-scale"},
        {{"nonsense"}, "unknown command"},
    };
    for (const auto& [args, part] : cases) {
        const auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << part << ": " << r.err;
        EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
}

TEST_F(CliFiles, HelpAndVersion) {
    EXPECT_EQ(run_cli({"--version"}).exit_code, 0);
    const auto h = run_cli({"fakequant", "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_NE(h.out.find("--granularity"), std::string::npos);
}

}  // namespace
}  // namespace ql
