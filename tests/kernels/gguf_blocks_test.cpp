// SPDX-License-Identifier: GPL-3.0-or-later
#include <cmath>
#include <limits>
#include <random>

#include "kernels/gguf_blocks.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

struct TypeCase {
    GgufType type;
    reference::Gguf ref;
    const char* name;
};
const TypeCase kTypes[] = {{GgufType::Q8_0, reference::Gguf::Q8_0, "q8_0"},
                           {GgufType::Q4_0, reference::Gguf::Q4_0, "q4_0"},
                           {GgufType::Q4_1, reference::Gguf::Q4_1, "q4_1"},
                           {GgufType::Q5_0, reference::Gguf::Q5_0, "q5_0"},
                           {GgufType::MXFP4, reference::Gguf::MXFP4, "mxfp4"}};

TEST(GgufBlocks, EveryTypeMatchesTheGgufPyTranscription) {
    const int64_t rows = 64, cols = 512;
    const auto x = test::mixed_tensor(rows, cols, 51);  // includes rows of subnormals
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols / 32 * gguf_type_size(t.type)));
        std::vector<float> dec(x.size()), fake(x.size());
        gguf_quantize(x.data(), rows, cols, t.type, bytes.data());
        gguf_dequantize(bytes.data(), rows, cols, t.type, dec.data());
        gguf_fake_quant(x.data(), fake.data(), RowBlocks{rows, cols, 32}, t.type);
        const auto ref = reference::gguf(x, rows, cols, t.ref);
        EXPECT_TRUE(test::same_items(bytes, ref.bytes));
        EXPECT_TRUE(test::same_values(dec, ref.values));
        EXPECT_TRUE(test::same_values(fake, ref.values));
    }
}

TEST(GgufBlocks, SubnormalBlocksGetGgmlsCodesAndDecodeToZeros) {
    // ggml's 1/d overflows here and its casts of +-Inf / NaN give code 0 (Q4_0, Q5_0: all bytes
    // of codes 0; Q8_0 and Q4_1 code 0 is also their zero); MXFP4's exponent byte wraps to 252
    // (floor(log2 2e-39) - 2 + 127 = -4). Every value decodes to zero, as in ggml and gguf-py.
    std::vector<float> x(32, 1e-39f);
    x[3] = -2e-39f;
    for (const auto& t : kTypes) {
        std::vector<uint8_t> b(static_cast<size_t>(gguf_type_size(t.type)));
        std::vector<float> y(32);
        gguf_quantize(x.data(), 1, 32, t.type, b.data());
        gguf_dequantize(b.data(), 1, 32, t.type, y.data());
        for (float v : y) EXPECT_EQ(v, 0.0f) << t.name;
        if (t.type == GgufType::Q4_0)
            for (int j = 2; j < 18; ++j) EXPECT_EQ(b[j], 0) << "byte " << j;
        if (t.type == GgufType::Q5_0)
            for (int j = 2; j < 22; ++j) EXPECT_EQ(b[j], 0) << "byte " << j;
        if (t.type == GgufType::MXFP4) EXPECT_EQ(b[0], 252);
    }
}

TEST(GgufBlocks, Q4_0HandComputed) {
    // max = -8 at element 0: d = 1, q = trunc(x + 8.5) clipped: element j low nibble, j+16 high.
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f;
    x[1] = 2.5f;    // trunc(11.0) = 11
    x[16] = 7.49f;  // trunc(15.99) = 15
    x[17] = 7.6f;   // trunc(16.1) = 16 -> 15
    std::vector<uint8_t> b(18);
    gguf_quantize(x.data(), 1, 32, GgufType::Q4_0, b.data());
    EXPECT_EQ(b[0], 0x00);  // fp16 1.0 = 0x3C00, little endian
    EXPECT_EQ(b[1], 0x3C);
    EXPECT_EQ(b[2], 0 | (15 << 4));
    EXPECT_EQ(b[3], 11 | (15 << 4));
    EXPECT_EQ(b[4], 8 | (8 << 4));
}

TEST(GgufBlocks, UnpackGivesCodesAndScales) {
    const auto x = test::mixed_tensor(2, 64, 52);
    for (const auto& t : kTypes) {
        std::vector<uint8_t> bytes(static_cast<size_t>(4 * gguf_type_size(t.type))), codes(128);
        std::vector<float> scales(8), dec(128);
        gguf_quantize(x.data(), 2, 64, t.type, bytes.data());
        gguf_dequantize(bytes.data(), 2, 64, t.type, dec.data());
        gguf_unpack(bytes.data(), 4, t.type, codes.data(), scales.data());
        for (int i = 0; i < 128; ++i) {
            const int b = i / 32;
            float v = 0;
            switch (t.type) {
                case GgufType::Q8_0: v = static_cast<int8_t>(codes[i]) * scales[b]; break;
                case GgufType::Q4_0: v = (codes[i] - 8) * scales[b]; break;
                case GgufType::Q5_0: v = (codes[i] - 16) * scales[b]; break;
                case GgufType::Q4_1: v = codes[i] * scales[2 * b] + scales[2 * b + 1]; break;
                case GgufType::MXFP4: {
                    static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
                    v = (codes[i] & 8 ? -1.0f : 1.0f) * e2m1[codes[i] & 7] * scales[b];
                    break;
                }
            }
            ASSERT_EQ(v, dec[i]) << t.name << " " << i;
        }
    }
}

TEST(GgufBlocks, NonFiniteElementsGetTheDocumentedCodes) {
    // Block 0: +-Inf among zeros (scale 0; ggml computes Inf * 0 = NaN and casts it to an integer,
    // on x86 INT_MIN, whose code bits are 0; MXFP4 saturates). Block 1: a NaN among finite values
    // (the zero code; Q4_1: code 0).
    std::vector<float> x(64, 0.0f);
    x[5] = std::numeric_limits<float>::infinity();
    x[20] = -std::numeric_limits<float>::infinity();
    for (int i = 32; i < 64; ++i) x[i] = static_cast<float>(i - 40) * 0.25f;
    x[40] = std::numeric_limits<float>::quiet_NaN();
    struct Expected {
        GgufType type;
        int pos_inf, neg_inf, nan;
    };
    const Expected cases[] = {{GgufType::Q8_0, 0, 0, 0},
                              {GgufType::Q4_0, 0, 0, 8},
                              {GgufType::Q4_1, 0, 0, 0},
                              {GgufType::Q5_0, 0, 0, 16},
                              {GgufType::MXFP4, 7, 15, 0}};
    for (const auto& c : cases) {
        std::vector<uint8_t> bytes(static_cast<size_t>(2 * gguf_type_size(c.type))), codes(64);
        std::vector<float> scales(4);
        gguf_quantize(x.data(), 1, 64, c.type, bytes.data());
        gguf_unpack(bytes.data(), 2, c.type, codes.data(), scales.data());
        EXPECT_EQ(codes[5], c.pos_inf) << static_cast<int>(c.type);
        EXPECT_EQ(codes[20], c.neg_inf) << static_cast<int>(c.type);
        EXPECT_EQ(codes[40], c.nan) << static_cast<int>(c.type);
    }
}

TEST(GgufBlocks, FloorLog2MatchesLibmLog2fNearEveryPowerOfTwo) {
    // The threshold table stands in for floorf(log2f(a)); on this libm they must agree where
    // they can differ: the floats just below each power of two, and a stride of all floats.
    size_t bad = 0;
    for (int k = -148; k <= 127; ++k) {
        float a = std::ldexp(1.0f, k);
        for (int i = 0; i < 64; ++i) {
            a = std::nextafter(a, 0.0f);
            if (a <= 0) break;
            if (gguf_floor_log2f(a) != static_cast<int>(std::floor(std::log2f(a))) && ++bad < 10)
                ADD_FAILURE() << "a=" << a;
        }
    }
    for (uint32_t b = 1; b < 0x7F800000u; b += 7919) {
        const float a = test::float_of(b);
        if (gguf_floor_log2f(a) != static_cast<int>(std::floor(std::log2f(a))) && ++bad < 10) ADD_FAILURE() << "a=" << a;
    }
    EXPECT_EQ(bad, 0u);
}

TEST(GgufBlocks, FakeQuantPadsTailsWithZeros) {
    const auto x = test::mixed_tensor(3, 40, 53);
    std::vector<float> padded(3 * 64, 0.0f), y(x.size()), yp(padded.size());
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 40; ++c) padded[r * 64 + c] = x[r * 40 + c];
    for (const auto& t : kTypes) {
        gguf_fake_quant(x.data(), y.data(), RowBlocks{3, 40, 32}, t.type);
        gguf_fake_quant(padded.data(), yp.data(), RowBlocks{3, 64, 32}, t.type);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 40; ++c) ASSERT_EQ(y[r * 40 + c], yp[r * 64 + c]) << t.name;
    }
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

TEST(GgufBlocks, InPlaceFakeQuantKeepsNaN) {
    for (const auto& t : kTypes) {
        auto x = test::mixed_tensor(2, 64, 54);
        x[7] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> out(x.size());
        gguf_fake_quant(x.data(), out.data(), RowBlocks{2, 64, 32}, t.type);
        gguf_fake_quant(x.data(), x.data(), RowBlocks{2, 64, 32}, t.type);
        EXPECT_TRUE(std::isnan(x[7])) << t.name;
        EXPECT_TRUE(test::same_values(x, out)) << t.name;
    }
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

// Whole tensors run eight blocks at a time (gguf_block_tiles.h), a single block the block
// functions of gguf_block_codec.h: the bytes and values must be the same on awkward blocks
// (zeros of both signs, NaN, +-Inf, ties, subnormals, fp16 overflow of d).
TEST(GgufBlocks, EightBlockTilesEqualTheBlockFunctions) {
    std::mt19937 rng(57);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t nblocks = 8 * 40 + 3;
    std::vector<float> x(static_cast<size_t>(nblocks * 32));
    for (int64_t b = 0; b < nblocks; ++b) {
        float* v = x.data() + b * 32;
        const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 60) - 40);
        for (int i = 0; i < 32; ++i) v[i] = normal(rng) * scale;
        switch (b % 9) {
            case 0: for (int i = 0; i < 32; ++i) v[i] = (rng() & 1) ? 0.0f : -0.0f; break;
            case 1: v[rng() % 32] = std::numeric_limits<float>::quiet_NaN(); break;
            case 2: v[rng() % 32] = (rng() & 1) ? INFINITY : -INFINITY; break;
            case 3: v[3] = 4.0f * scale, v[9] = -4.0f * scale; break;
            case 4: for (int i = 0; i < 32; ++i) v[i] = test::float_of(static_cast<uint32_t>(rng() & 0x807FFFFFu)); break;
            case 5: v[0] = 65520.0f * 127.0f; break;
            case 6: for (int i = 0; i < 32; ++i) v[i] = std::fabs(v[i]); v[7] = 0.0f; break;  // zero minimum
            default: break;
        }
    }
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        const int64_t bytes = gguf_type_size(t.type);
        std::vector<uint8_t> whole(static_cast<size_t>(nblocks * bytes)), single(whole.size());
        std::vector<float> fake_whole(x.size()), fake_single(x.size());
        gguf_quantize(x.data(), 1, nblocks * 32, t.type, whole.data());
        for (int64_t b = 0; b < nblocks; ++b)  // one block per call: the block functions
            gguf_quantize(x.data() + b * 32, 1, 32, t.type, single.data() + b * bytes);
        EXPECT_TRUE(test::same_items(whole, single));
        for (int64_t b = 0; b < nblocks; ++b)
            gguf_fake_quant(x.data() + b * 32, fake_single.data() + b * 32, RowBlocks{1, 32, 32}, t.type);
        gguf_fake_quant(x.data(), fake_whole.data(), RowBlocks{1, nblocks * 32, 32}, t.type);
        EXPECT_TRUE(test::same_values(fake_whole, fake_single));
        std::vector<float> dec(x.size());
        gguf_dequantize(whole.data(), 1, nblocks * 32, t.type, dec.data());
        for (size_t i = 0; i < x.size(); ++i)
            if (!std::isnan(x[i])) ASSERT_TRUE(dec[i] == fake_whole[i] || (std::isnan(dec[i]) && std::isnan(fake_whole[i]))) << i;
    }
}

}  // namespace
}  // namespace ql::kernels
