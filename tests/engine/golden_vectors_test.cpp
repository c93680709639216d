// SPDX-License-Identifier: GPL-3.0-or-later
// Our formats against vectors produced by the real peer libraries (torchao, NVIDIA Model
// Optimizer, bitsandbytes, llama.cpp's gguf package): tests/data/golden/manifest.json, written by
// scripts/golden/make_golden.py, which names each peer's version and function.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/api/fake_quant_api.h"
#include "engine/io/npy_file.h"
#include "kernels/nf4.h"

namespace ql {
namespace {

const std::string kGoldenDir = std::string(QUANTLAB_TEST_DATA_DIR) + "/golden/";

nlohmann::json manifest() {
    std::ifstream in(kGoldenDir + "manifest.json");
    if (!in) return nullptr;
    return nlohmann::json::parse(in);
}

std::string bits_hex(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", u);
    return b;
}

::testing::AssertionResult same_floats(const NdArray& got, const NdArray& want) {
    if (got.shape != want.shape)
        return ::testing::AssertionFailure() << "shape " << shape_string(got.shape) << " vs " << shape_string(want.shape);
    const float* a = got.as<float>();
    const float* b = want.as<float>();
    for (int64_t i = 0; i < got.numel(); ++i) {
        if (std::isnan(a[i]) && std::isnan(b[i])) continue;
        if (!(a[i] == b[i]))
            return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " (" << bits_hex(a[i]) << ") vs peer "
                                                 << b[i] << " (" << bits_hex(b[i]) << ")";
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bytes(const NdArray& got, const NdArray& want) {
    if (got.numel() != want.numel())
        return ::testing::AssertionFailure() << "shape " << shape_string(got.shape) << " vs " << shape_string(want.shape);
    for (size_t i = 0; i < got.bytes.size(); ++i)
        if (got.bytes[i] != want.bytes[i])
            return ::testing::AssertionFailure() << "byte " << i << ": " << int(got.bytes[i]) << " vs peer " << int(want.bytes[i]);
    return ::testing::AssertionSuccess();
}

TEST(GoldenVectors, ManifestListsCasesForEveryPeerFormat) {
    const auto m = manifest();
    ASSERT_FALSE(m.is_null()) << "missing " << kGoldenDir << "manifest.json";
    std::set<std::string> formats;
    for (const auto& c : m["cases"]) formats.insert(c["format"].get<std::string>());
    for (const char* f : {"fp8_e4m3", "nvfp4", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nf4",
                          "gguf_q8_0", "gguf_q4_0", "gguf_q4_1", "gguf_q5_0", "gguf_mxfp4"})
        EXPECT_TRUE(formats.count(f)) << f;
}

FakeQuantResult run_case(const nlohmann::json& c) {
    FakeQuantRequest req;
    req.input = read_npy(kGoldenDir + c["input"].get<std::string>());
    req.options.format = c["format"];
    const auto& opt = c.value("options", nlohmann::json::object());
    req.options.mx_scale = opt.value("mx_scale", std::string("floor"));
    req.options.double_quant = opt.value("double_quant", false);
    req.want_codes = req.want_scales = req.want_packed = true;
    return run_fake_quant(req);
}

const nlohmann::json& find_case(const nlohmann::json& m, const std::string& name) {
    for (const auto& c : m["cases"])
        if (c["name"] == name) return c;
    throw std::runtime_error("no golden case " + name);
}

TEST(GoldenVectors, EveryExactCaseMatchesItsPeerBitForBit) {
    const auto m = manifest();
    ASSERT_FALSE(m.is_null());
    int checked = 0;
    for (const auto& c : m["cases"]) {
        const std::string name = c["name"];
        if (c.value("compare", std::string("exact")) != "exact") continue;
        SCOPED_TRACE(name + " (" + c.value("source", std::string("?")) + ")");
        FakeQuantRequest req;
        req.input = read_npy(kGoldenDir + c["input"].get<std::string>());
        req.options.format = c["format"];
        const auto& opt = c.value("options", nlohmann::json::object());
        req.options.mx_scale = opt.value("mx_scale", std::string("floor"));
        req.options.double_quant = opt.value("double_quant", false);
        req.options.asymmetric = opt.value("asym", false);
        req.options.granularity = opt.value("granularity", std::string());
        req.options.group_size = opt.value("group_size", int64_t{0});
        req.want_codes = c.contains("codes");
        req.want_scales = c.contains("scales");
        req.want_packed = c.contains("packed");
        const FakeQuantResult r = run_fake_quant(req);
        EXPECT_TRUE(same_floats(r.values, read_npy(kGoldenDir + c["values"].get<std::string>()))) << "values";
        if (req.want_codes) EXPECT_TRUE(same_bytes(*r.codes, read_npy(kGoldenDir + c["codes"].get<std::string>()))) << "codes";
        if (req.want_scales) EXPECT_TRUE(same_floats(*r.scales, read_npy(kGoldenDir + c["scales"].get<std::string>()))) << "scales";
        if (req.want_packed) EXPECT_TRUE(same_bytes(*r.packed, read_npy(kGoldenDir + c["packed"].get<std::string>()))) << "packed";
        if (c.contains("global_scale") && !c["global_scale"].is_null()) {
            ASSERT_TRUE(r.global_scale.has_value());
            EXPECT_EQ(*r.global_scale, c["global_scale"].get<float>());
        }
        ++checked;
    }
    EXPECT_GE(checked, 55);
}

// Model Optimizer 0.47 clamps an underflowing NVFP4 block scale to 2^-9; FORMATS.md decodes
// such a block to zeros. Everywhere else the two agree bit for bit.
TEST(GoldenVectors, Nvfp4UnderflowBlockDiffersOnlyWhereFormatsMdSaysZero) {
    const auto m = manifest();
    const auto& c = find_case(m, "nvfp4_underflow_block");
    const FakeQuantResult r = run_case(c);
    const NdArray peer = read_npy(kGoldenDir + c["values"].get<std::string>());
    const NdArray peer_scales = read_npy(kGoldenDir + c["scales"].get<std::string>());
    const int64_t cols = r.values.shape.back();
    int zero_blocks = 0;
    for (int64_t b = 0; b < r.scales->numel(); ++b) {
        const bool underflow = r.scales->as<float>()[b] == 0.0f;
        zero_blocks += underflow;
        if (!underflow) EXPECT_EQ(r.scales->as<float>()[b], peer_scales.as<float>()[b]) << "block " << b;
        EXPECT_EQ(peer_scales.as<float>()[b] == 0.0f, false) << "the peer clamps block scales to >= 2^-9";
        const int64_t row = b / (cols / 16), blk = b % (cols / 16);
        for (int64_t i = 0; i < 16; ++i) {
            const int64_t e = row * cols + blk * 16 + i;
            if (underflow)
                EXPECT_EQ(r.values.as<float>()[e], 0.0f) << e;
            else
                EXPECT_EQ(r.values.as<float>()[e], peer.as<float>()[e]) << e;
        }
    }
    EXPECT_GT(zero_blocks, 0);
}

// gguf-py 0.19.0 and ggml_quantize_chunk (ggml-base: llama-quantize's quantizer, compiled
// without FMA flags) round x*id and +8.5 (+16.5) separately in float32, and so does FORMATS.md.
// Ours must equal the peer's codes, and the inputs must be ones where a fused multiply-add
// would give other codes.
TEST(GoldenVectors, GgufFmaSensitiveCasesRoundTheProductAndTheSumApart) {
    const auto m = manifest();
    for (const char* name : {"gguf_q4_0_fma_sensitive", "gguf_q5_0_fma_sensitive"}) {
        SCOPED_TRACE(name);
        const auto& c = find_case(m, name);
        const bool five = std::string(name).find("q5_0") != std::string::npos;
        const FakeQuantResult r = run_case(c);
        const NdArray x = read_npy(kGoldenDir + c["input"].get<std::string>());
        const NdArray peer_codes = read_npy(kGoldenDir + c["codes"].get<std::string>());
        const float bias = five ? 16.5f : 8.5f;
        const int top = five ? 31 : 15;
        int differing = 0;
        for (int64_t b0 = 0; b0 < x.numel(); b0 += 32) {
            const float* xb = x.as<float>() + b0;
            int imax = 0;
            for (int i = 1; i < 32; ++i)
                if (std::fabs(xb[i]) > std::fabs(xb[imax])) imax = i;
            const float d = xb[imax] / (five ? -16.0f : -8.0f);
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int i = 0; i < 32; ++i) {
                volatile float prod = xb[i] * id;  // one rounding, then another for the add
                const int separate = std::min(top, static_cast<int>(std::trunc(prod + bias)));
                const int fused = std::min(top, static_cast<int>(std::trunc(std::fma(xb[i], id, bias))));
                EXPECT_EQ(r.codes->as<uint8_t>()[b0 + i], separate) << b0 + i;
                EXPECT_EQ(peer_codes.as<uint8_t>()[b0 + i], separate) << b0 + i;
                differing += fused != separate;
            }
        }
        EXPECT_GT(differing, 0) << "the case should exercise the difference";
    }
}

// The remaining informational cases document peer behaviour FORMATS.md does not follow
// (torchao's tiny-block and RCEIL log2 paths, bitsandbytes' native CPU double quantizer, Model
// Optimizer's own MXFP4 export). They must run cleanly; the differences are listed in
// docs/FORMATS.md ("Where peers differ").
TEST(GoldenVectors, InformationalCasesRunAndAreListed) {
    const auto m = manifest();
    int informational = 0;
    for (const auto& c : m["cases"]) {
        if (c.value("compare", std::string("exact")) == "exact") continue;
        ++informational;
        EXPECT_FALSE(c.value("note", std::string()).empty()) << c["name"];
        const FakeQuantResult r = run_case(c);
        const NdArray peer = read_npy(kGoldenDir + c["values"].get<std::string>());
        int64_t diff = 0;
        for (int64_t i = 0; i < peer.numel(); ++i) {
            const float a = r.values.as<float>()[i], b = peer.as<float>()[i];
            diff += !(a == b || (std::isnan(a) && std::isnan(b)));
        }
        std::printf("[ informational ] %-32s differs from its peer in %lld of %lld values\n",
                    c["name"].get<std::string>().c_str(), static_cast<long long>(diff), static_cast<long long>(peer.numel()));
    }
    EXPECT_GE(informational, 10);
}

TEST(GoldenVectors, KernelTablesEqualThePeersTables) {
    std::ifstream in(kGoldenDir + "tables.json");
    const auto t = nlohmann::json::parse(in);
    auto as_bits = [](float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        return u;
    };
    const auto& nf4 = t["nf4_codebook"]["hex"];
    ASSERT_EQ(nf4.size(), 16u);
    for (int i = 0; i < 16; ++i)
        EXPECT_EQ(as_bits(kernels::kNf4Codebook[i]), std::stoul(nf4[i].get<std::string>(), nullptr, 16)) << i;
    const auto& dm = t["dynamic_map_signed"]["hex"];
    ASSERT_EQ(dm.size(), 256u);
    for (int i = 0; i < 256; ++i)
        EXPECT_EQ(as_bits(kernels::kDynamicMapSigned[i]), std::stoul(dm[i].get<std::string>(), nullptr, 16)) << i;
}

}  // namespace
}  // namespace ql
