// SPDX-License-Identifier: GPL-3.0-or-later
// The i-quant and ternary kernels (gguf_iquant_encode.h: eight-wide neighbour and split searches,
// candidate scales evaluated together) against the scalar transcription of ggml
// (kernels/reference/reference_iquants.h), bit for bit, with and without importance; their search
// tables against ggml's qsort-built lists; fake quantization, codes and scales, tails, non-finite
// input and the importance rule. The transcription itself is checked against ggml in tests/peers
// (GgmlOracle.*IQuant*) and scripts/check-kquants.
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_iquant_codec.h"
#include "kernels/gguf_iquant_lattice.h"
#include "kernels/reference/reference_iquants.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

using reference::IQuant;

struct TypeCase {
    GgufType type;
    IQuant ref;
    const char* name;
};
const TypeCase kTypes[] = {{GgufType::IQ2_XXS, IQuant::IQ2_XXS, "iq2_xxs"}, {GgufType::IQ2_XS, IQuant::IQ2_XS, "iq2_xs"},
                           {GgufType::IQ2_S, IQuant::IQ2_S, "iq2_s"},       {GgufType::IQ3_XXS, IQuant::IQ3_XXS, "iq3_xxs"},
                           {GgufType::IQ3_S, IQuant::IQ3_S, "iq3_s"},       {GgufType::IQ1_S, IQuant::IQ1_S, "iq1_s"},
                           {GgufType::IQ1_M, IQuant::IQ1_M, "iq1_m"},       {GgufType::TQ1_0, IQuant::TQ1_0, "tq1_0"},
                           {GgufType::TQ2_0, IQuant::TQ2_0, "tq2_0"}};

// Rows of the kinds the GGUF tests name: normal, heavy-tailed (Student t, 2 degrees of freedom),
// all-zero, tiny (1e-20), huge (1e9), subnormal, constant, one outlier, values on a coarse grid
// (many ties: IQ1's sorts), small N(0, 0.02) weights, one zero sub-block among normal ones (IQ3_S
// shifts its slots past it).
std::vector<float> iquant_rows(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> heavy(2.0f);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            float v = 0.0f;
            switch (r % 11) {
                case 0: v = normal(rng); break;
                case 1: v = heavy(rng); break;
                case 2: v = 0.0f; break;
                case 3: v = normal(rng) * 1e-20f; break;
                case 4: v = normal(rng) * 1e9f; break;
                case 5: v = test::float_of(static_cast<uint32_t>(rng() & 0x801FFFFFu)); break;  // |x| < 3e-39
                case 6: v = 0.375f; break;
                case 7: v = c == cols / 3 ? 100.0f : normal(rng) * 0.01f; break;
                case 8: v = std::round(normal(rng) * 2.0f) * 0.5f; break;
                case 9: v = normal(rng) * 0.02f; break;
                default: v = (c % 256) / 32 == 3 ? 0.0f : normal(rng); break;
            }
            x[static_cast<size_t>(r * cols + c)] = v;
        }
    return x;
}

std::vector<float> importance_for(int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::lognormal_distribution<float> d(0.0f, 1.5f);
    std::vector<float> w(static_cast<size_t>(cols));
    for (auto& v : w) v = d(rng);
    w[0] = 0.0f;  // a column nobody reads
    return w;
}

size_t bytes_of(GgufType t, int64_t rows, int64_t cols) {
    return static_cast<size_t>(rows * (cols / gguf_block_elements(t)) * gguf_type_size(t));
}

TEST(GgufIQuants, EveryTypeMatchesTheGgmlTranscriptionWithAndWithoutImportance) {
    const int64_t rows = 11, cols = 512;  // every kind of row once
    const auto x = iquant_rows(rows, cols, 91);
    const auto imp = importance_for(cols, 92);
    for (const auto& t : kTypes) {
        for (bool weighted : {false, true}) {
            if (!weighted && gguf_requires_importance(t.type)) continue;
            SCOPED_TRACE(std::string(t.name) + (weighted ? " with importance" : ""));
            std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols));
            gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), weighted ? imp.data() : nullptr);
            const auto ref = reference::iquant_quantize(x, rows, cols, t.ref, weighted ? imp : std::vector<float>{});
            EXPECT_TRUE(test::same_items(bytes, ref));
            std::vector<float> dec(x.size());
            gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
            EXPECT_TRUE(test::same_values(dec, reference::iquant_dequantize(ref, rows, cols, t.ref)));
        }
    }
}

TEST(GgufIQuants, SearchTablesAreGgmlsQsortedNeighbourLists) {
    // Every level vector the quantizers form: the point it is, or ggml's list, in ggml's order.
    using iquant::Lattice;
    for (Lattice l : {Lattice::IQ2_XXS, Lattice::IQ2_XS, Lattice::IQ2_S, Lattice::IQ1_S, Lattice::IQ3_XXS, Lattice::IQ3_S}) {
        const iquant::LatticeSearch& s = iquant::lattice_search(l);
        const iquant::LatticeTable& t = *s.table;
        int lists = 0;
        for (int u = 0; u < static_cast<int>(s.map.size()); ++u) {
            bool formed = true;
            for (int c = 0; c < t.dims; ++c) formed = formed && ((u >> (t.bits * c)) & ((1 << t.bits) - 1)) < t.levels_count;
            const auto ref = reference::iquant_reference_neighbours(l, u);
            const int32_t m = s.map[static_cast<size_t>(u)];
            if (!formed) {
                EXPECT_EQ(m, std::numeric_limits<int32_t>::min()) << u;
                continue;
            }
            if (m >= 0) {
                ASSERT_TRUE(ref.empty()) << u;
                EXPECT_EQ(t.points[m], u);
                continue;
            }
            const iquant::NeighbourList& list = s.lists[static_cast<size_t>(-m - 1)];
            ASSERT_EQ(list.count, ref.size()) << static_cast<int>(l) << " u " << u;
            for (uint32_t j = 0; j < list.count; ++j) {
                ASSERT_EQ(s.indices[list.first + j], ref[j]) << static_cast<int>(l) << " u " << u << " #" << j;
                ASSERT_EQ(s.packed[list.packed + j], t.points[ref[j]]);
            }
            ++lists;
        }
        EXPECT_GT(lists, 0);
    }
}

TEST(GgufIQuants, GridsAreTheLatticePointsThroughTheLevelValues) {
    // grid8 / grid4 (ggml-common.h's byte grids, for the reference decoder) and point_levels (the
    // optimised codec's) describe the same points.
    using iquant::Lattice;
    for (Lattice l : {Lattice::IQ2_XXS, Lattice::IQ2_XS, Lattice::IQ2_S, Lattice::IQ1_S, Lattice::IQ3_XXS, Lattice::IQ3_S}) {
        const iquant::LatticeTable& t = iquant::lattice_table(l);
        const int8_t* pl = iquant::point_levels(l);
        for (int k = 0; k < t.size; ++k)
            for (int c = 0; c < t.dims; ++c) {
                const uint64_t row = t.dims == 8 ? iquant::grid8(l)[k] : iquant::grid4(l)[k];
                ASSERT_EQ(static_cast<int8_t>(row >> (8 * c)), t.levels[pl[k * t.dims + c]]) << k << "," << c;
            }
    }
    // ggml-common.h's first entries, as written there.
    EXPECT_EQ(iquant::grid8(Lattice::IQ2_XXS)[0], 0x0808080808080808ull);
    EXPECT_EQ(iquant::grid8(Lattice::IQ1_S)[0], 0xffffffffffffffffull);
    EXPECT_EQ(iquant::grid4(Lattice::IQ3_XXS)[0], 0x04040404u);
    EXPECT_EQ(iquant::grid4(Lattice::IQ3_S)[511], 0x0f0f0101u);
    EXPECT_EQ(iquant::grid8(Lattice::IQ2_XXS)[1], 0x080808080808082bull);
    EXPECT_EQ(iquant::ksigns_iq2xs(1), 129);
    EXPECT_EQ(iquant::ksigns_iq2xs(3), 3);
}

TEST(GgufIQuants, TypesThatRequireImportanceRejectNone) {
    const std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> b(128);
    std::vector<float> y(256);
    for (const auto& t : kTypes) {
        const bool required = t.type == GgufType::IQ2_XXS || t.type == GgufType::IQ2_XS || t.type == GgufType::IQ1_S;
        EXPECT_EQ(gguf_requires_importance(t.type), required) << t.name;
        EXPECT_EQ(gguf_uses_importance(t.type), t.type != GgufType::TQ1_0 && t.type != GgufType::TQ2_0) << t.name;
        if (!required) continue;
        EXPECT_THROW(gguf_quantize(x.data(), 1, 256, t.type, b.data()), std::invalid_argument) << t.name;
        EXPECT_THROW(gguf_fake_quant(x.data(), y.data(), RowBlocks{1, 256, 256}, t.type), std::invalid_argument) << t.name;
    }
}

TEST(GgufIQuants, ResultsDoNotDependOnTheThreadCount) {
    const int64_t rows = 13, cols = 768;
    const auto x = iquant_rows(rows, cols, 93);
    const auto imp = importance_for(cols, 94);
    const int threads = omp_get_max_threads();
    for (const auto& t : kTypes) {
        std::vector<uint8_t> one(bytes_of(t.type, rows, cols)), many(one.size());
        std::vector<float> fake_one(x.size()), fake_many(x.size());
        const RowBlocks L{rows, cols, 256};
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

TEST(GgufIQuants, FakeQuantIsDecodeOfEncodeAndPadsTailsWithZeros) {
    const int64_t rows = 11, cols = 512;
    const auto x = iquant_rows(rows, cols, 95);
    const auto imp = importance_for(cols, 96);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        const RowBlocks L{rows, cols, 256};
        std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols));
        std::vector<float> dec(x.size()), fake(x.size());
        gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), imp.data());
        gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
        gguf_fake_quant(x.data(), fake.data(), L, t.type, imp.data());
        EXPECT_TRUE(test::same_values(fake, dec));
        // A row of 300 behaves as the row padded with zeros (importance 0) to 512.
        const int64_t short_cols = 300;
        std::vector<float> xs(static_cast<size_t>(rows * short_cols)), ys(xs.size()), padded(x.size(), 0.0f), yp(x.size());
        std::vector<float> imp_pad(imp.begin(), imp.end());
        for (int64_t c = short_cols; c < cols; ++c) imp_pad[static_cast<size_t>(c)] = 0.0f;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < short_cols; ++c) xs[r * short_cols + c] = padded[r * cols + c] = x[r * cols + c];
        gguf_fake_quant(xs.data(), ys.data(), RowBlocks{rows, short_cols, 256}, t.type, imp.data());
        gguf_fake_quant(padded.data(), yp.data(), L, t.type, imp_pad.data());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < short_cols; ++c) {
                const float a = ys[r * short_cols + c], b = yp[r * cols + c];
                ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << r << "," << c << ": " << a << " vs " << b;
            }
    }
}

TEST(GgufIQuants, UnpackedCodesAndScalesRebuildTheDecodedValuesExactly) {
    const int64_t rows = 11, cols = 512;
    const auto x = iquant_rows(rows, cols, 97);
    const auto imp = importance_for(cols, 98);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        const int64_t nb = rows * cols / 256, sub = gguf_sub_block(t.type);
        const int per = gguf_scales_per_block(t.type);
        ASSERT_EQ(per, 256 / sub);
        std::vector<uint8_t> bytes(bytes_of(t.type, rows, cols)), codes(x.size());
        std::vector<float> dec(x.size()), scales(static_cast<size_t>(nb * per));
        gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), imp.data());
        gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
        gguf_unpack(bytes.data(), nb, t.type, codes.data(), scales.data());
        const float* values;
        const int n_values = iquant::iquant_code_values(t.type, &values);
        const auto ref = reference::iquant_dequantize(bytes, rows, cols, t.ref);
        for (int64_t i = 0; i < rows * cols; ++i) {
            ASSERT_LT(codes[i], n_values);
            const float v = scales[(i / 256) * per + (i % 256) / sub] * values[codes[i]];
            ASSERT_TRUE(v == ref[i] || (std::isnan(v) && std::isnan(ref[i]))) << i << ": " << v << " vs " << ref[i];
            ASSERT_TRUE(dec[i] == ref[i] || (std::isnan(dec[i]) && std::isnan(ref[i]))) << i;
        }
    }
}

TEST(GgufIQuants, AllZeroBlocksHaveGgmlsBytes) {
    // ggml: a zero scale (d = 0) and no points for the lattice types; IQ1_S still stores its
    // shift bit pattern 0; TQ1_0 / TQ2_0 store the zero trit everywhere (TQ1_0: five trits 1 ->
    // 121 -> ceil(121 * 256 / 243) = 128; four -> 40 * 3 = 120 -> 127; TQ2_0: 0x55).
    const std::vector<float> x(256, 0.0f);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> b(bytes_of(t.type, 1, 256));
        const std::vector<float> imp(256, 1.0f);
        gguf_quantize(x.data(), 1, 256, t.type, b.data(), imp.data());
        EXPECT_TRUE(test::same_items(b, reference::iquant_quantize(x, 1, 256, t.ref, imp)));
        if (t.type == GgufType::TQ1_0) {
            for (int j = 0; j < 48; ++j) EXPECT_EQ(b[j], 128) << j;
            for (int j = 48; j < 52; ++j) EXPECT_EQ(b[j], 127) << j;
            EXPECT_EQ(b[52] | b[53], 0);
        } else if (t.type == GgufType::TQ2_0) {
            for (int j = 0; j < 64; ++j) EXPECT_EQ(b[j], 0x55) << j;
            EXPECT_EQ(b[64] | b[65], 0);
        } else {
            for (uint8_t v : b) EXPECT_EQ(v, 0);
        }
        std::vector<float> y(256);
        gguf_dequantize(b.data(), 1, 256, t.type, y.data());
        for (float v : y) EXPECT_EQ(v, 0.0f);
    }
}

TEST(GgufIQuants, NonFiniteElementsAreZeroForTheSearchAndTernaryInfSaturates) {
    const int64_t cols = 256;
    auto base = iquant_rows(1, cols, 99);  // a normal row
    const auto imp = importance_for(cols, 100);
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
        gguf_quantize(x.data(), 1, cols, t.type, b.data(), imp.data());
        gguf_quantize(zeroed.data(), 1, cols, t.type, bz.data(), imp.data());
        std::vector<float> y(cols), yz(cols), fake(cols);
        gguf_dequantize(b.data(), 1, cols, t.type, y.data());
        gguf_dequantize(bz.data(), 1, cols, t.type, yz.data());
        gguf_fake_quant(x.data(), fake.data(), RowBlocks{1, cols, 256}, t.type, imp.data());
        const bool ternary = t.type == GgufType::TQ1_0 || t.type == GgufType::TQ2_0;
        if (!ternary) EXPECT_EQ(b, bz);
        for (int64_t i = 0; i < cols; ++i) {
            if (i == 5) continue;
            EXPECT_EQ(fake[i], y[i]) << i;
            if (ternary && (i == 40 || i == 200)) continue;
            EXPECT_EQ(y[i], yz[i]) << i;  // the same search as with zeros
        }
        EXPECT_TRUE(std::isnan(fake[5]));
        if (ternary) {  // +-Inf take the trit +-1: +-d
            uint8_t codes[256];
            float d;
            gguf_unpack(b.data(), 1, t.type, codes, &d);
            EXPECT_GT(d, 0.0f);
            EXPECT_EQ(y[40], d);
            EXPECT_EQ(y[200], -d);
        }
    }
}

TEST(GgufIQuants, InPlaceFakeQuantEqualsOutOfPlace) {
    const auto imp = importance_for(512, 101);
    for (const auto& t : kTypes) {
        auto x = iquant_rows(4, 512, 102);
        x[7] = std::numeric_limits<float>::quiet_NaN();
        const RowBlocks L{4, 512, 256};
        std::vector<float> out(x.size());
        gguf_fake_quant(x.data(), out.data(), L, t.type, imp.data());
        gguf_fake_quant(x.data(), x.data(), L, t.type, imp.data());
        EXPECT_TRUE(std::isnan(x[7])) << t.name;
        EXPECT_TRUE(test::same_values(x, out)) << t.name;
    }
}

TEST(GgufIQuants, BlockFieldsAreTheStoredScalesAndSuperScale) {
    const auto x = iquant_rows(1, 256, 103);
    const auto imp = importance_for(256, 104);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> b(bytes_of(t.type, 1, 256));
        gguf_quantize(x.data(), 1, 256, t.type, b.data(), imp.data());
        const GgufBlockFields f = gguf_block_fields(b.data(), t.type);
        EXPECT_EQ(f.sub_blocks, 256 / gguf_sub_block(t.type));
        std::vector<uint8_t> codes(256);
        std::vector<float> scales(static_cast<size_t>(f.sub_blocks));
        gguf_unpack(b.data(), 1, t.type, codes.data(), scales.data());
        // The decoded sub-block scale from d and the stored integer, by each type's formula.
        for (int j = 0; j < f.sub_blocks; ++j) {
            const float s = static_cast<float>(f.scales[j]);
            float expect = f.d;
            switch (t.type) {
                case GgufType::IQ2_XXS:
                case GgufType::IQ2_XS:
                case GgufType::IQ2_S: expect = f.d * (0.5f + s) * 0.25f; break;
                case GgufType::IQ3_XXS: expect = f.d * (0.5f + s) * 0.5f; break;
                case GgufType::IQ3_S: expect = f.d * (1 + 2 * s); break;
                case GgufType::IQ1_S:
                case GgufType::IQ1_M: expect = f.d * (2 * s + 1); break;
                default: break;
            }
            EXPECT_EQ(scales[static_cast<size_t>(j)], expect) << j;
            EXPECT_LT(f.scales[j], 1 << std::max(f.scale_bits, 1));
        }
        EXPECT_GT(f.d, 0.0f);
    }
}

}  // namespace
}  // namespace ql::kernels
