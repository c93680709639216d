// SPDX-License-Identifier: GPL-3.0-or-later
// The K-quant and IQ4 kernels (lane-parallel searches, gguf_kquant_codec.h) against the scalar
// transcription of ggml (kernels/reference/reference_kquants.h), bit for bit, with and without
// importance, and their fake quantization, codes and scales, non-finite rules and layouts. The
// transcription itself is checked against ggml in tests/peers (GgmlOracle.*).
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/gguf_blocks.h"
#include "kernels/reference/reference_kquants.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

using reference::KQuant;

struct TypeCase {
    GgufType type;
    KQuant ref;
    const char* name;
};
const TypeCase kTypes[] = {{GgufType::Q2_K, KQuant::Q2_K, "q2_K"},     {GgufType::Q3_K, KQuant::Q3_K, "q3_K"},
                           {GgufType::Q4_K, KQuant::Q4_K, "q4_K"},     {GgufType::Q5_K, KQuant::Q5_K, "q5_K"},
                           {GgufType::Q6_K, KQuant::Q6_K, "q6_K"},     {GgufType::IQ4_NL, KQuant::IQ4_NL, "iq4_nl"},
                           {GgufType::IQ4_XS, KQuant::IQ4_XS, "iq4_xs"}};

// Rows of the kinds the GGUF tests name: normal, heavy-tailed (Student t, 2 degrees of freedom),
// all-zero, tiny (1e-20), huge (1e9), subnormal, constant, one outlier, and mixed_tensor's.
std::vector<float> kquant_rows(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> heavy(2.0f);
    std::vector<float> x = test::mixed_tensor(rows, cols, seed);
    for (int64_t r = 0; r < rows; ++r) {
        const int kind = static_cast<int>(r % 9);
        for (int64_t c = 0; c < cols; ++c) {
            float& v = x[static_cast<size_t>(r * cols + c)];
            switch (kind) {
                case 0: v = normal(rng); break;
                case 1: v = heavy(rng); break;
                case 2: v = 0.0f; break;
                case 3: v = normal(rng) * 1e-20f; break;
                case 4: v = normal(rng) * 1e9f; break;
                case 5: v = test::float_of(static_cast<uint32_t>(rng() & 0x801FFFFFu)); break;  // |x| < 3e-39
                case 6: v = 0.375f; break;
                case 7: v = c == cols / 3 ? 100.0f : normal(rng) * 0.01f; break;
                default: break;  // mixed_tensor
            }
        }
    }
    return x;
}

std::vector<float> importance_for(int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::lognormal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(cols));
    for (auto& v : w) v = d(rng);
    w[0] = 0.0f;  // a column nobody reads
    return w;
}

size_t bytes_of(GgufType t, int64_t rows, int64_t cols) {
    return static_cast<size_t>(rows * (cols / gguf_block_elements(t)) * gguf_type_size(t));
}

TEST(GgufKQuants, EveryTypeMatchesTheGgmlTranscriptionWithAndWithoutImportance) {
    const int64_t rows = 27, cols = 512;
    const auto x = kquant_rows(rows, cols, 71);
    const auto imp = importance_for(cols, 72);
    for (const auto& t : kTypes) {
        for (bool weighted : {false, true}) {
            SCOPED_TRACE(std::string(t.name) + (weighted ? " with importance" : ""));
            std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols));
            gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), weighted ? imp.data() : nullptr);
            const auto ref = reference::kquant_quantize(x, rows, cols, t.ref, weighted ? imp : std::vector<float>{});
            EXPECT_TRUE(test::same_items(bytes, ref));
            std::vector<float> dec(x.size());
            gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
            EXPECT_TRUE(test::same_values(dec, reference::kquant_dequantize(ref, rows, cols, t.ref)));
        }
    }
}

TEST(GgufKQuants, ImportanceChangesTheSearchAndUniformImportanceIsNotThePlainSearch) {
    // ggml's two entry points are different searches: weights qw * sqrt(sigma2 + x^2) vs the
    // reference weights. Both must be reachable, and a reweighting must move some scales.
    const int64_t rows = 8, cols = 256;
    const auto x = kquant_rows(rows, cols, 73);
    const auto imp = importance_for(cols, 74);
    for (const auto& t : kTypes) {
        std::vector<uint8_t> plain(bytes_of(t.type, rows, cols)), weighted(plain.size());
        gguf_quantize(x.data(), rows, cols, t.type, plain.data());
        gguf_quantize(x.data(), rows, cols, t.type, weighted.data(), imp.data());
        EXPECT_NE(plain, weighted) << t.name;
    }
}

TEST(GgufKQuants, ResultsDoNotDependOnTheThreadCount) {
    const int64_t rows = 33, cols = 768;
    const auto x = kquant_rows(rows, cols, 75);
    const auto imp = importance_for(cols, 76);
    const int threads = omp_get_max_threads();
    for (const auto& t : kTypes) {
        std::vector<uint8_t> one(bytes_of(t.type, rows, cols)), many(one.size());
        std::vector<float> fake_one(x.size()), fake_many(x.size());
        const RowBlocks L{rows, cols, gguf_block_elements(t.type)};
        omp_set_num_threads(1);
        gguf_quantize(x.data(), rows, cols, t.type, one.data(), imp.data());
        gguf_fake_quant(x.data(), fake_one.data(), L, t.type, imp.data());
        omp_set_num_threads(4);
        gguf_quantize(x.data(), rows, cols, t.type, many.data(), imp.data());
        gguf_fake_quant(x.data(), fake_many.data(), L, t.type, imp.data());
        omp_set_num_threads(threads);
        EXPECT_EQ(one, many) << t.name;
        EXPECT_TRUE(test::same_values(fake_one, fake_many)) << t.name;
    }
}

TEST(GgufKQuants, FakeQuantIsDecodeOfEncodeAndPadsTailsWithZeros) {
    const int64_t rows = 5, cols = 512;
    const auto x = kquant_rows(rows, cols, 77);
    const auto imp = importance_for(cols, 78);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        const RowBlocks L{rows, cols, gguf_block_elements(t.type)};
        std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols));
        std::vector<float> dec(x.size()), fake(x.size());
        for (const float* w : {static_cast<const float*>(nullptr), imp.data()}) {
            gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), w);
            gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
            gguf_fake_quant(x.data(), fake.data(), L, t.type, w);
            EXPECT_TRUE(test::same_values(fake, dec));
        }
        // A row of 300 behaves as the row padded with zeros (importance 0) to 512.
        const int64_t short_cols = 300;
        std::vector<float> xs(static_cast<size_t>(rows * short_cols)), ys(xs.size()), padded(x.size(), 0.0f),
            yp(x.size());
        std::vector<float> imp_pad(imp.begin(), imp.end());
        for (int64_t c = short_cols; c < cols; ++c) imp_pad[static_cast<size_t>(c)] = 0.0f;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < short_cols; ++c) xs[r * short_cols + c] = padded[r * cols + c] = x[r * cols + c];
        gguf_fake_quant(xs.data(), ys.data(), RowBlocks{rows, short_cols, gguf_block_elements(t.type)}, t.type, imp.data());
        gguf_fake_quant(padded.data(), yp.data(), L, t.type, imp_pad.data());
        // (Rows of 1e9 decode to Inf / NaN in the fp16-scaled types: d overflows fp16, as in ggml.)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < short_cols; ++c) {
                const float a = ys[r * short_cols + c], b = yp[r * cols + c];
                ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << r << "," << c << ": " << a << " vs " << b;
            }
    }
}

TEST(GgufKQuants, UnpackedCodesAndScalesRebuildTheDecodedValuesExactly) {
    const int64_t rows = 9, cols = 512;
    const auto x = kquant_rows(rows, cols, 79);
    static const float kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        const int64_t E = gguf_block_elements(t.type), nb = rows * cols / E, sub = gguf_sub_block(t.type);
        const int per = gguf_scales_per_block(t.type);
        std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols)), codes(x.size());
        std::vector<float> dec(x.size()), scales(static_cast<size_t>(nb * per));
        gguf_quantize(x.data(), rows, cols, t.type, bytes.data());
        gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
        gguf_unpack(bytes.data(), nb, t.type, codes.data(), scales.data());
        for (int64_t i = 0; i < rows * cols; ++i) {
            const int64_t b = i / E, j = (i % E) / sub;
            const int q = codes[i];
            float v = 0;
            switch (t.type) {
                case GgufType::Q2_K:
                case GgufType::Q4_K:
                case GgufType::Q5_K: v = scales[b * per + 2 * j] * static_cast<float>(q) - scales[b * per + 2 * j + 1]; break;
                case GgufType::Q3_K: v = scales[b * per + j] * static_cast<float>(q - 4); break;
                case GgufType::Q6_K: v = scales[b * per + j] * static_cast<float>(q - 32); break;
                default: v = scales[b * per + j] * kv[q]; break;
            }
            ASSERT_TRUE(v == dec[i] || (std::isnan(v) && std::isnan(dec[i]))) << i << ": " << v << " vs " << dec[i];
            ASSERT_LE(q, (1 << (t.type == GgufType::Q2_K ? 2 : t.type == GgufType::Q3_K ? 3 : t.type == GgufType::Q5_K ? 5
                                 : t.type == GgufType::Q6_K ? 6 : 4)) - 1);
        }
    }
}

TEST(GgufKQuants, Iq4NlHandComputedBlockOnItsOwnGrid) {
    // x = kvalues[j % 16] / 4: the search finds d = 1/4 exactly (zero error), fp16 0x3400, and
    // element j's index is j % 16, so byte j of qs is j | j << 4.
    static const float kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = kv[j % 16] * 0.25f;
    std::vector<uint8_t> b(18);
    gguf_quantize(x.data(), 1, 32, GgufType::IQ4_NL, b.data());
    EXPECT_EQ(b[0], 0x00);
    EXPECT_EQ(b[1], 0x34);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b[2 + j], j | (j << 4)) << j;
    std::vector<float> y(32);
    gguf_dequantize(b.data(), 1, 32, GgufType::IQ4_NL, y.data());
    EXPECT_TRUE(test::same_values(y, x));
}

TEST(GgufKQuants, Q6KHandComputedConstantBlock) {
    // 256 values of 1.0. Each sub-block: max = 1, iscale = -32, l = -32 (L = 0), scale =
    // sumlx / suml2 = -512 / 16384 = -1/32; the 18 other candidates reach l = -31 at best, which
    // ties (sumlx^2 == best suml2) and is not taken. Super-block: iscale = -128 / (-1/32) = 4096,
    // d = fp16(2^-12) = 0x0C00, scales = min(127, nearest(4096 * -1/32)) = -128 (0x80); the
    // requantization gives l = nearest(1 / (-1/32)) = -32 again: every code 0, decoding to
    // (2^-12 * -128) * (0 - 32) = 1 exactly.
    std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> b(210);
    gguf_quantize(x.data(), 1, 256, GgufType::Q6_K, b.data());
    for (int j = 0; j < 16; ++j) EXPECT_EQ(b[192 + j], 0x80) << j;
    for (int j = 0; j < 192; ++j) EXPECT_EQ(b[j], 0x00) << "ql/qh " << j;
    EXPECT_EQ(b[208], 0x00);
    EXPECT_EQ(b[209], 0x0C);
    std::vector<float> y(256);
    gguf_dequantize(b.data(), 1, 256, GgufType::Q6_K, y.data());
    EXPECT_TRUE(test::same_values(y, x));
    EXPECT_TRUE(test::same_items(b, reference::kquant_quantize(x, 1, 256, KQuant::Q6_K, {})));
}

TEST(GgufKQuants, AllZeroBlocksHaveGgmlsBytes) {
    // ggml: Q2_K/Q4_K/Q5_K/Q6_K/Q3_K all zero bytes; IQ4_NL d = 0, indices 8 (best_index(0));
    // IQ4_XS d = -0.0 (0x8000), scales 32 (scales_h 0xAAAA, scales_l 0x00), indices 8.
    const std::vector<float> x(256, 0.0f);
    for (const auto& t : kTypes) {
        const int64_t cols = 256;
        std::vector<uint8_t> b(bytes_of(t.type, 1, cols));
        gguf_quantize(x.data(), 1, cols, t.type, b.data());
        if (t.type == GgufType::IQ4_NL) {
            for (size_t k = 0; k < b.size(); k += 18) {
                EXPECT_EQ(b[k] | (b[k + 1] << 8), 0);
                for (int j = 2; j < 18; ++j) EXPECT_EQ(b[k + j], 0x88);
            }
        } else if (t.type == GgufType::IQ4_XS) {
            EXPECT_EQ(b[0] | (b[1] << 8), 0x8000);
            EXPECT_EQ(b[2] | (b[3] << 8), 0xAAAA);
            for (int j = 4; j < 8; ++j) EXPECT_EQ(b[j], 0);
            for (int j = 8; j < 136; ++j) EXPECT_EQ(b[j], 0x88);
        } else {
            for (uint8_t v : b) EXPECT_EQ(v, 0) << t.name;
        }
    }
}

TEST(GgufKQuants, NonFiniteElementsAreZeroForTheSearchAndInfSaturates) {
    const int64_t cols = 256;
    const auto base = kquant_rows(1, cols, 81);  // a normal row (kind 0)
    auto x = base;
    const float inf = std::numeric_limits<float>::infinity();
    x[5] = std::numeric_limits<float>::quiet_NaN();
    x[40] = inf;
    x[200] = -inf;
    auto zeroed = base;
    zeroed[5] = zeroed[40] = zeroed[200] = 0.0f;
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> b(bytes_of(t.type, 1, cols)), bz(b.size());
        gguf_quantize(x.data(), 1, cols, t.type, b.data());
        gguf_quantize(zeroed.data(), 1, cols, t.type, bz.data());
        std::vector<float> y(cols), yz(cols), fake(cols);
        gguf_dequantize(b.data(), 1, cols, t.type, y.data());
        gguf_dequantize(bz.data(), 1, cols, t.type, yz.data());
        gguf_fake_quant(x.data(), fake.data(), RowBlocks{1, cols, gguf_block_elements(t.type)}, t.type);
        const int64_t sub = gguf_sub_block(t.type);
        for (int64_t i = 0; i < cols; ++i) {
            if (i == 40 || i == 200) continue;
            EXPECT_EQ(y[i], yz[i]) << i;  // the same search as with zeros
        }
        // +Inf: at least every other value of its sub-block; -Inf: at most.
        for (int64_t i = (40 / sub) * sub; i < (40 / sub + 1) * sub; ++i) EXPECT_GE(y[40], yz[i]) << i;
        for (int64_t i = (200 / sub) * sub; i < (200 / sub + 1) * sub; ++i) EXPECT_LE(y[200], yz[i]) << i;
        EXPECT_TRUE(std::isnan(fake[5]));
        EXPECT_EQ(fake[40], y[40]);
    }
}

TEST(GgufKQuants, InPlaceFakeQuantEqualsOutOfPlace) {
    for (const auto& t : kTypes) {
        auto x = kquant_rows(4, 512, 83);
        x[7] = std::numeric_limits<float>::quiet_NaN();
        const RowBlocks L{4, 512, gguf_block_elements(t.type)};
        std::vector<float> out(x.size());
        gguf_fake_quant(x.data(), out.data(), L, t.type);
        gguf_fake_quant(x.data(), x.data(), L, t.type);
        EXPECT_TRUE(std::isnan(x[7])) << t.name;
        EXPECT_TRUE(test::same_values(x, out)) << t.name;
    }
}

TEST(GgufKQuants, BlockFieldsAreTheStoredIntegers) {
    const auto x = kquant_rows(1, 256, 85);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> b(bytes_of(t.type, 1, 256));
        gguf_quantize(x.data(), 1, 256, t.type, b.data());
        const GgufBlockFields f = gguf_block_fields(b.data(), t.type);
        const int per = gguf_scales_per_block(t.type);
        std::vector<uint8_t> codes(256);
        std::vector<float> scales(static_cast<size_t>(per * (256 / gguf_block_elements(t.type))));
        gguf_unpack(b.data(), 256 / gguf_block_elements(t.type), t.type, codes.data(), scales.data());
        EXPECT_EQ(f.sub_blocks, static_cast<int>(gguf_block_elements(t.type) / gguf_sub_block(t.type)));
        for (int j = 0; j < f.sub_blocks; ++j) {
            switch (t.type) {
                case GgufType::Q2_K:
                case GgufType::Q4_K:
                case GgufType::Q5_K:
                    EXPECT_EQ(scales[2 * j], f.d * static_cast<float>(f.scales[j]));
                    EXPECT_EQ(scales[2 * j + 1], f.dmin * static_cast<float>(f.mins[j]));
                    EXPECT_LT(f.scales[j], 1 << f.scale_bits);
                    break;
                case GgufType::Q3_K:
                case GgufType::IQ4_XS: EXPECT_EQ(scales[j], f.d * static_cast<float>(f.scales[j] - 32)); break;
                case GgufType::Q6_K: EXPECT_EQ(scales[j], f.d * static_cast<float>(f.scales[j])); break;
                default: EXPECT_EQ(scales[j], f.d); break;
            }
        }
    }
}

}  // namespace
}  // namespace ql::kernels

#include "kernels/gguf_kquant_trace.h"

namespace ql::kernels {
namespace {

// The traced searches are the kernels' searches: quantized by ggml's super-block step they give
// exactly the stored sub-block scales and super scales of the encoded block.
TEST(GgufKQuantTrace, TracedSearchesGiveTheStoredScales) {
    const int64_t rows = 9, cols = 256;
    const auto x = kquant_rows(rows, cols, 87);
    const auto imp = importance_for(cols, 88);
    for (const auto& t : kTypes) {
        const int64_t E = gguf_block_elements(t.type);
        const int subs = static_cast<int>(E / gguf_sub_block(t.type));
        for (bool weighted : {false, true})
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t b = 0; b < cols / E; ++b) {
                    SCOPED_TRACE(std::string(t.name) + (weighted ? " importance" : "") + " row " + std::to_string(r));
                    const float* xb = x.data() + r * cols + b * E;
                    const float* qw = weighted ? imp.data() + b * E : nullptr;
                    std::vector<uint8_t> bytes(static_cast<size_t>(gguf_type_size(t.type)));
                    gguf_quantize(xb, 1, E, t.type, bytes.data(), qw);
                    const GgufBlockFields stored = gguf_block_fields(bytes.data(), t.type);
                    std::vector<GgufSubBlockSearch> searches;
                    for (int j = 0; j < subs; ++j) {
                        searches.push_back(gguf_trace_sub_block_search(xb, qw, t.type, j));
                        EXPECT_FALSE(searches.back().candidates.empty());
                        EXPECT_FALSE(searches.back().objective.empty());
                    }
                    GgufBlockFields traced;
                    gguf_trace_super_block(searches, xb, qw, t.type, &traced);
                    EXPECT_TRUE(traced.d == stored.d || (std::isnan(traced.d) && std::isnan(stored.d))) << traced.d << " vs " << stored.d;
                    if (gguf_has_min(t.type)) EXPECT_TRUE(traced.dmin == stored.dmin || (std::isnan(traced.dmin) && std::isnan(stored.dmin)));
                    for (int j = 0; j < subs && t.type != GgufType::IQ4_NL; ++j) {
                        EXPECT_EQ(traced.scales[j], stored.scales[j]) << "sub-block " << j;
                        EXPECT_EQ(traced.mins[j], stored.mins[j]) << "sub-block " << j;
                    }
                }
    }
}

}  // namespace
}  // namespace ql::kernels
