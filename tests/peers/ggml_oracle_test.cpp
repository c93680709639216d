// SPDX-License-Identifier: GPL-3.0-or-later
// Every GGUF type QuantLab writes against llama.cpp itself: ggml_quantize_chunk and the type's
// to_float from the peers venv's libggml-base.so (tests/peers/ggml_library.h), byte for byte and
// bit for bit, on random, heavy-tailed, all-zero, tiny, huge and subnormal rows, with and without
// an importance matrix, through the fast kernels and the scalar transcription alike. Fails (does
// not skip) when the library cannot be loaded.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_q5_1.h"
#include "kernels/reference/reference_formats.h"
#include "kernels/reference/reference_kquants.h"
#include "tests/kernels/test_data.h"
#include "tests/peers/ggml_library.h"

namespace ql::kernels {
namespace {

using test::GgmlLibrary;

struct TypeCase {
    GgufType type;
    int ggml;
    const char* name;
};
const TypeCase kTypes[] = {{GgufType::Q8_0, GgmlLibrary::Q8_0, "Q8_0"},     {GgufType::Q4_0, GgmlLibrary::Q4_0, "Q4_0"},
                           {GgufType::Q4_1, GgmlLibrary::Q4_1, "Q4_1"},     {GgufType::Q5_0, GgmlLibrary::Q5_0, "Q5_0"},
                           {GgufType::MXFP4, GgmlLibrary::MXFP4, "MXFP4"},  {GgufType::Q2_K, GgmlLibrary::Q2_K, "Q2_K"},
                           {GgufType::Q3_K, GgmlLibrary::Q3_K, "Q3_K"},     {GgufType::Q4_K, GgmlLibrary::Q4_K, "Q4_K"},
                           {GgufType::Q5_K, GgmlLibrary::Q5_K, "Q5_K"},     {GgufType::Q6_K, GgmlLibrary::Q6_K, "Q6_K"},
                           {GgufType::IQ4_NL, GgmlLibrary::IQ4_NL, "IQ4_NL"}, {GgufType::IQ4_XS, GgmlLibrary::IQ4_XS, "IQ4_XS"}};

enum class Kind { Normal, HeavyTailed, Zero, Tiny, Huge, Subnormal, Overflowing, Outliers, Constant, Mixed };
const Kind kKinds[] = {Kind::Normal, Kind::HeavyTailed, Kind::Zero,     Kind::Tiny,     Kind::Huge,
                       Kind::Subnormal, Kind::Overflowing, Kind::Outliers, Kind::Constant, Kind::Mixed};

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::Normal: return "normal";
        case Kind::HeavyTailed: return "heavy-tailed";
        case Kind::Zero: return "all-zero";
        case Kind::Tiny: return "tiny (1e-20)";
        case Kind::Huge: return "huge (1e9)";
        case Kind::Subnormal: return "subnormal (|x| < 2e-39)";
        case Kind::Overflowing: return "overflowing search (1e30)";
        case Kind::Outliers: return "outliers";
        case Kind::Constant: return "constant";
        case Kind::Mixed: return "mixed";
    }
    return "?";
}

std::vector<float> rows_of(Kind kind, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> heavy(2.0f);
    if (kind == Kind::Mixed) return test::mixed_tensor(rows, cols, seed);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < x.size(); ++i) {
        float& v = x[i];
        switch (kind) {
            case Kind::Normal: v = normal(rng); break;
            case Kind::HeavyTailed: v = heavy(rng); break;
            case Kind::Zero: v = (rng() & 1) ? 0.0f : -0.0f; break;
            case Kind::Tiny: v = normal(rng) * 1e-20f; break;
            case Kind::Huge: v = normal(rng) * 1e9f; break;
            case Kind::Subnormal: v = test::float_of(static_cast<uint32_t>(rng() & 0x801FFFFFu)); break;
            case Kind::Overflowing: v = normal(rng) * 1e30f; break;
            case Kind::Outliers: v = (rng() % 97 == 0) ? normal(rng) * 300.0f : normal(rng) * 0.02f; break;
            case Kind::Constant: v = -0.8125f; break;
            case Kind::Mixed: break;
        }
    }
    return x;
}

std::vector<float> importance_for(int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::lognormal_distribution<float> d(0.0f, 1.5f);
    std::vector<float> w(static_cast<size_t>(cols));
    for (auto& v : w) v = d(rng);
    for (int64_t c = 0; c < cols; c += 37) w[static_cast<size_t>(c)] = 0.0f;  // columns never read
    return w;
}

::testing::AssertionResult same_bytes(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& ggml) {
    if (ours.size() != ggml.size()) return ::testing::AssertionFailure() << "sizes " << ours.size() << " vs " << ggml.size();
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < ours.size(); ++i)
        if (ours[i] != ggml[i] && diff++ == 0) first = i;
    if (diff == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << diff << " of " << ours.size() << " bytes differ, first at " << first << ": "
                                         << int(ours[first]) << " vs ggml " << int(ggml[first]);
}

std::vector<uint8_t> ours(const TypeCase& t, const std::vector<float>& x, int64_t rows, int64_t cols, const float* imp) {
    std::vector<uint8_t> b(static_cast<size_t>(rows * (cols / gguf_block_elements(t.type)) * gguf_type_size(t.type)));
    gguf_quantize(x.data(), rows, cols, t.type, b.data(), imp);
    return b;
}

// Every type, every kind of row, without and with importance (ggml ignores it for Q8_0 / MXFP4).
TEST(GgmlOracle, EveryTypeAndKindOfRowMatchesGgmlQuantizeChunkByteForByte) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    const int64_t rows = 6, cols = 1024;
    const auto imp = importance_for(cols, 91);
    uint32_t seed = 100;
    for (Kind kind : kKinds) {
        const auto x = rows_of(kind, rows, cols, ++seed);
        for (const auto& t : kTypes)
            for (bool weighted : {false, true}) {
                SCOPED_TRACE(std::string(t.name) + ", " + kind_name(kind) + (weighted ? ", importance" : ""));
                const float* w = weighted ? imp.data() : nullptr;
                EXPECT_TRUE(same_bytes(ours(t, x, rows, cols, w), ggml.quantize(t.ggml, x.data(), rows, cols, w)));
            }
    }
}

// The scalar transcriptions (the references the fast kernels are tested against) are ggml too.
TEST(GgmlOracle, TheScalarTranscriptionsAreGgml) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    const int64_t rows = 4, cols = 512;
    const auto imp = importance_for(cols, 92);
    const std::pair<GgufType, reference::KQuant> kq[] = {
        {GgufType::Q2_K, reference::KQuant::Q2_K}, {GgufType::Q3_K, reference::KQuant::Q3_K},
        {GgufType::Q4_K, reference::KQuant::Q4_K}, {GgufType::Q5_K, reference::KQuant::Q5_K},
        {GgufType::Q6_K, reference::KQuant::Q6_K}, {GgufType::IQ4_NL, reference::KQuant::IQ4_NL},
        {GgufType::IQ4_XS, reference::KQuant::IQ4_XS}};
    const std::pair<GgufType, reference::Gguf> legacy[] = {
        {GgufType::Q8_0, reference::Gguf::Q8_0}, {GgufType::Q4_0, reference::Gguf::Q4_0},
        {GgufType::Q4_1, reference::Gguf::Q4_1}, {GgufType::Q5_0, reference::Gguf::Q5_0},
        {GgufType::MXFP4, reference::Gguf::MXFP4}};
    uint32_t seed = 200;
    for (Kind kind : kKinds) {
        const auto x = rows_of(kind, rows, cols, ++seed);
        for (const auto& t : kTypes) {
            SCOPED_TRACE(std::string(t.name) + ", " + kind_name(kind));
            for (const auto& [gt, rk] : kq)
                if (gt == t.type)
                    for (bool weighted : {false, true})
                        EXPECT_TRUE(same_bytes(reference::kquant_quantize(x, rows, cols, rk, weighted ? imp : std::vector<float>{}),
                                               ggml.quantize(t.ggml, x.data(), rows, cols, weighted ? imp.data() : nullptr)));
            for (const auto& [gt, rg] : legacy)
                if (gt == t.type)
                    EXPECT_TRUE(same_bytes(reference::gguf(x, rows, cols, rg).bytes, ggml.quantize(t.ggml, x.data(), rows, cols, nullptr)));
        }
    }
}

// Decoding: our dequantize equals ggml's to_float on the same bytes (ggml's own bytes).
TEST(GgmlOracle, DequantizeEqualsGgmlToFloat) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    const int64_t rows = 4, cols = 768;
    uint32_t seed = 300;
    for (Kind kind : kKinds) {
        const auto x = rows_of(kind, rows, cols, ++seed);
        for (const auto& t : kTypes) {
            if (cols % gguf_block_elements(t.type) != 0) continue;
            SCOPED_TRACE(std::string(t.name) + ", " + kind_name(kind));
            const auto bytes = ggml.quantize(t.ggml, x.data(), rows, cols, nullptr);
            std::vector<float> y(x.size());
            gguf_dequantize(bytes.data(), rows, cols, t.type, y.data());
            EXPECT_TRUE(test::same_values(y, ggml.dequantize(t.ggml, bytes.data(), rows, cols)));
        }
    }
}

// Shapes llama-quantize meets: one row, many rows, rows of several super-blocks.
TEST(GgmlOracle, ShapesFromOneRowToManyMatch) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    for (const auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 256}, {1, 4096}, {97, 256}, {3, 2816}, {64, 768}}) {
        const auto x = rows_of(Kind::HeavyTailed, rows, cols, static_cast<uint32_t>(rows * 31 + cols));
        const auto imp = importance_for(cols, static_cast<uint32_t>(cols));
        for (const auto& t : kTypes) {
            if (cols % gguf_block_elements(t.type) != 0) continue;
            SCOPED_TRACE(std::string(t.name) + " " + std::to_string(rows) + "x" + std::to_string(cols));
            EXPECT_TRUE(same_bytes(ours(t, x, rows, cols, nullptr), ggml.quantize(t.ggml, x.data(), rows, cols, nullptr)));
            EXPECT_TRUE(same_bytes(ours(t, x, rows, cols, imp.data()), ggml.quantize(t.ggml, x.data(), rows, cols, imp.data())));
        }
    }
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

// Q5_1 (gguf_q5_1.h: the fallback type of Q5_K tensors whose rows are not a multiple of 256,
// AVX2-encoded in tiles of eight blocks) against ggml, every kind of row, with and without
// importance, on row lengths whose blocks fill tiles and leave tails.
TEST(GgmlOracle, Q5_1MatchesGgmlQuantizeChunkByteForByte) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    uint32_t seed = 700;
    for (const int64_t cols : {1024, 96}) {
        const int64_t rows = 6;
        const auto imp = importance_for(cols, 92);
        for (Kind kind : kKinds) {
            const auto x = rows_of(kind, rows, cols, ++seed);
            for (bool weighted : {false, true}) {
                SCOPED_TRACE(std::string("Q5_1, ") + kind_name(kind) + (weighted ? ", importance" : "") + ", cols " + std::to_string(cols));
                const float* w = weighted ? imp.data() : nullptr;
                std::vector<uint8_t> b(static_cast<size_t>(rows * cols / 32 * kGgufQ5_1BlockBytes));
                gguf_q5_1_quantize(x.data(), rows, cols, b.data(), w);
                EXPECT_TRUE(same_bytes(b, ggml.quantize(GgmlLibrary::Q5_1, x.data(), rows, cols, w)));
            }
        }
    }
}

}  // namespace
}  // namespace ql::kernels
