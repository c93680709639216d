// SPDX-License-Identifier: GPL-3.0-or-later
// The AVX2 GGUF fake quantization (gguf_fake_avx2.h) against encode-then-decode (gguf_quantize +
// gguf_dequantize, whose bytes the ggml oracle checks) and against the portable block function,
// bit for bit (the sign of zero included; a NaN input stays that NaN), on random, heavy-tailed,
// subnormal, NaN/Inf, zero and tie blocks; in place, with the streamed stores of large outputs,
// and through gguf_fake_quant on shapes whose thread ranges split tiles anywhere.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_fake_avx2.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

constexpr int kB = 32;
const GgufType kTypes[] = {GgufType::Q8_0, GgufType::Q4_0, GgufType::Q5_0, GgufType::MXFP4};

// nblocks * 32 floats of many kinds of blocks (deterministic for a seed).
std::vector<float> awkward_blocks(int64_t nblocks, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(1e-6f, 1.0f);
    std::uniform_int_distribution<int> pos(0, kB - 1), kind_dist(0, 15), exp_dist(-149, 127);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x(static_cast<size_t>(nblocks * kB));
    for (int64_t b = 0; b < nblocks; ++b) {
        float* v = x.data() + b * kB;
        const float scale = std::ldexp(1.0f, exp_dist(rng) / 2);
        for (int i = 0; i < kB; ++i) v[i] = normal(rng) * scale;
        const int i = pos(rng), j = pos(rng);
        switch (kind_dist(rng)) {
            case 0: v[i] = 4.0f * scale, v[j] = -4.0f * scale; break;  // signed-max tie (or i == j)
            case 1: v[i] = nan, v[j] = (rng() & 1) ? inf : -inf; break;
            case 2:
                for (int k = 0; k < kB; ++k) v[k] = (rng() & 1) ? 0.0f : -0.0f;
                if (rng() & 1) v[i] = (rng() & 1) ? inf : -inf;
                break;
            case 3:  // subnormal block
                for (int k = 0; k < kB; ++k) v[k] = test::float_of(static_cast<uint32_t>(rng() & 0x807FFFFFu));
                break;
            case 4:  // a max of any magnitude (every rounding and the overflow of fp16(d))
                v[i] = test::float_of(static_cast<uint32_t>(rng() & 0xFF7FFFFFu));
                for (int k = 0; k < kB; ++k)
                    if (k != i) v[k] = v[i] * std::ldexp(normal(rng), -3);
                break;
            case 5:  // heavy-tailed: normal / uniform^2 (Cauchy-like tails)
                for (int k = 0; k < kB; ++k) v[k] = normal(rng) * scale / (unit(rng) * unit(rng));
                break;
            case 6: v[i] = nan; break;
            case 7:  // tiny normal block near the E8M0 / 1/d limits
                for (int k = 0; k < kB; ++k) v[k] = std::ldexp(normal(rng), -120 - static_cast<int>(rng() % 8));
                break;
            case 8:  // exact midpoints of the MXFP4 grid and of the integer codes
                for (int k = 0; k < kB; ++k) v[k] = scale * 0.25f * static_cast<float>(static_cast<int>(rng() % 97) - 48);
                break;
            case 9: v[i] = 65520.0f * 127.0f * ((rng() & 1) ? 1.0f : -1.0f); break;  // fp16(d) overflow
            default: break;  // plain normal block
        }
    }
    return x;
}

// encode + decode, with NaN inputs kept: what fake quantization means.
std::vector<float> encode_decode(const std::vector<float>& x, GgufType t) {
    const int64_t nb = static_cast<int64_t>(x.size()) / kB;
    std::vector<uint8_t> bytes(static_cast<size_t>(nb * gguf_type_size(t)));
    std::vector<float> y(x.size());
    gguf_quantize(x.data(), 1, nb * kB, t, bytes.data());
    gguf_dequantize(bytes.data(), 1, nb * kB, t, y.data());
    for (size_t i = 0; i < x.size(); ++i)
        if (std::isnan(x[i])) y[i] = x[i];
    return y;
}

const char* name_of(GgufType t) {
    return t == GgufType::Q8_0 ? "q8_0" : t == GgufType::Q4_0 ? "q4_0" : t == GgufType::Q5_0 ? "q5_0" : "mxfp4";
}

TEST(GgufFakeAvx2, EqualsEncodeThenDecodeBitForBit) {
    if (!gguf_fake_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 8 * 3000 + 5;  // whole tiles and a tail
    const auto x = awkward_blocks(nb, 21);
    for (GgufType t : kTypes) {
        SCOPED_TRACE(name_of(t));
        std::vector<float> y(x.size(), 7.0f);
        gguf_fake_quant_avx2(t, x.data(), y.data(), nb, gguf_log2_round_up_thresholds());
        EXPECT_TRUE(test::same_bits(y, encode_decode(x, t)));
    }
}

TEST(GgufFakeAvx2, EqualsThePortableBlockFunctionBitForBit) {
    // One block per gguf_fake_quant call runs gguf_codec::fake_quant_block (a tile needs 8).
    if (!gguf_fake_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 8 * 500;
    const auto x = awkward_blocks(nb, 22);
    for (GgufType t : kTypes) {
        SCOPED_TRACE(name_of(t));
        std::vector<float> fast(x.size()), single(x.size());
        gguf_fake_quant_avx2(t, x.data(), fast.data(), nb, gguf_log2_round_up_thresholds());
        for (int64_t b = 0; b < nb; ++b)
            gguf_fake_quant(x.data() + b * kB, single.data() + b * kB, RowBlocks{1, kB, kB}, t);
        EXPECT_TRUE(test::same_bits(fast, single));
    }
}

TEST(GgufFakeAvx2, InPlaceAndStreamedOutputsAreTheSame) {
    // 36 000 blocks are 4.4 MiB of output: above the streaming threshold when y is aligned.
    if (!gguf_fake_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 36000;
    const auto x = awkward_blocks(nb, 23);
    for (GgufType t : kTypes) {
        SCOPED_TRACE(name_of(t));
        const auto want = encode_decode(x, t);
        std::vector<float> aligned(x.size() + 8);
        float* y = aligned.data() + (8 - (reinterpret_cast<uintptr_t>(aligned.data()) / 4) % 8) % 8;  // 32-byte aligned
        gguf_fake_quant_avx2(t, x.data(), y, nb, gguf_log2_round_up_thresholds());
        EXPECT_TRUE(test::same_bits(std::vector<float>(y, y + x.size()), want)) << "streamed";
        std::vector<float> odd(x.size() + 1);
        gguf_fake_quant_avx2(t, x.data(), odd.data() + 1, nb, gguf_log2_round_up_thresholds());  // never aligned
        EXPECT_TRUE(test::same_bits(std::vector<float>(odd.begin() + 1, odd.end()), want)) << "unaligned";
        std::memcpy(y, x.data(), x.size() * sizeof(float));
        gguf_fake_quant_avx2(t, y, y, nb, gguf_log2_round_up_thresholds());
        EXPECT_TRUE(test::same_bits(std::vector<float>(y, y + x.size()), want)) << "in place";
    }
}

TEST(GgufFakeAvx2, GgufFakeQuantOnShapesThatSplitTilesEqualsEncodeThenDecode) {
    // Rows of 3, 8 and 129 blocks, and a row tail: thread ranges and rows start anywhere in a tile.
    for (const int64_t cols : {96, 256, 4128, 4100}) {
        const int64_t rows = 37, padded = (cols + kB - 1) / kB * kB;
        const auto blocks = awkward_blocks(rows * padded / kB, 24 + static_cast<uint32_t>(cols));
        std::vector<float> x(static_cast<size_t>(rows * cols)), xp(blocks.size(), 0.0f);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = xp[r * padded + c] = blocks[r * padded + c];
        for (GgufType t : kTypes) {
            SCOPED_TRACE(std::string(name_of(t)) + " cols " + std::to_string(cols));
            std::vector<float> y(x.size());
            gguf_fake_quant(x.data(), y.data(), RowBlocks{rows, cols, kB}, t);
            const auto want_padded = encode_decode(xp, t);
            std::vector<float> want(x.size());
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = want_padded[r * padded + c];
            EXPECT_TRUE(test::same_bits(y, want));
        }
    }
}

}  // namespace
}  // namespace ql::kernels
