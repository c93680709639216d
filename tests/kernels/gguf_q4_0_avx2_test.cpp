// SPDX-License-Identifier: GPL-3.0-or-later
// The AVX2 Q4_0 encoder against the portable block encoder that the CUDA kernels share
// (gguf_codec::q4_0_encode), byte for byte, on the blocks where the two compute differently:
// signed-max ties, NaN/Inf, zero and subnormal blocks, fp16 rounding and overflow of d.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/gguf_block_codec.h"
#include "kernels/gguf_blocks.h"
#include "kernels/gguf_q4_0_avx2.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

constexpr int kB = 32, kBytes = 18;

// Blocks of many kinds, nblocks * 32 floats (deterministic for a seed).
std::vector<float> awkward_blocks(int64_t nblocks, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> pos(0, kB - 1), kind_dist(0, 11), exp_dist(-149, 127);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x(static_cast<size_t>(nblocks * kB));
    for (int64_t b = 0; b < nblocks; ++b) {
        float* v = x.data() + b * kB;
        const float scale = std::ldexp(1.0f, exp_dist(rng) / 2);
        for (int i = 0; i < kB; ++i) v[i] = normal(rng) * scale;
        const int i = pos(rng), j = pos(rng);
        switch (kind_dist(rng)) {
            case 0: v[i] = 4.0f * scale, v[j] = -4.0f * scale; break;  // tie, either order (or i == j)
            case 1: v[i] = -4.0f * scale, v[j] = 4.0f * scale; break;
            case 2: v[i] = nan, v[j] = (rng() & 1) ? inf : -inf; break;
            case 3:
                for (int k = 0; k < kB; ++k) v[k] = (rng() & 1) ? 0.0f : -0.0f;
                if (rng() & 1) v[i] = (rng() & 1) ? inf : -inf;  // Inf * (1/d = 0): the zero code
                break;
            case 4:  // subnormal block: d subnormal, 1/d overflows
                for (int k = 0; k < kB; ++k) v[k] = test::float_of(static_cast<uint32_t>(rng() & 0x807FFFFFu));
                break;
            case 5:  // a max of any magnitude: every rounding of fp16(d), overflow to Inf included
                v[i] = test::float_of(static_cast<uint32_t>(rng() & 0xFF7FFFFFu));
                for (int k = 0; k < kB; ++k)
                    if (k != i) v[k] = v[i] * std::ldexp(normal(rng), -3);
                break;
            case 6: v[i] = 65520.0f * 8.0f * ((rng() & 1) ? 1.0f : -1.0f); break;  // d at the fp16 overflow threshold
            case 7:
                for (int k = 0; k < kB; ++k) v[k] = nan;
                break;
            case 8:  // a normal max whose d = max/-8 is subnormal but 1/d finite: d rounded coarsely
                for (int k = 0; k < kB; ++k) v[k] = std::ldexp(normal(rng), -128);
                v[i] = std::ldexp(1.0f + static_cast<float>(rng() % 1024) / 1024.0f, -126 + static_cast<int>(rng() % 4)) * ((rng() & 1) ? 1.0f : -1.0f);
                break;
            default: break;  // plain normal block
        }
    }
    return x;
}

std::vector<uint8_t> portable_encode(const std::vector<float>& x) {
    const int64_t nb = static_cast<int64_t>(x.size()) / kB;
    std::vector<uint8_t> out(static_cast<size_t>(nb * kBytes));
    for (int64_t b = 0; b < nb; ++b) gguf_codec::q4_0_encode(x.data() + b * kB, out.data() + b * kBytes);
    return out;
}

TEST(GgufQ4_0Avx2, EqualsThePortableEncoderOnAwkwardBlocks) {
    if (!q4_0_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 8 * 4000 + 5;  // whole tiles and a tail
    const auto x = awkward_blocks(nb, 7);
    std::vector<uint8_t> fast(static_cast<size_t>(nb * kBytes), 0xAA);
    quantize_q4_0_avx2(x.data(), fast.data(), nb);
    EXPECT_TRUE(test::same_items(fast, portable_encode(x)));
}

TEST(GgufQ4_0Avx2, EqualsThePortableEncoderAtAnyOutputAlignmentAndLength) {
    // Runs of any length written at every offset from a 64-byte boundary: the plain head, the
    // streamed groups of 32 blocks (from the first 64-byte aligned block) and the tail, and odd
    // output addresses, which never align.
    if (!q4_0_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    constexpr int64_t kMax = 104;
    const auto x = awkward_blocks(kMax + 3, 11);
    const auto want = portable_encode(x);
    std::vector<uint8_t> buffer(static_cast<size_t>(kMax * kBytes + 128));
    uint8_t* base = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
    for (int64_t shift = 0; shift < 64; ++shift) {
        for (const int64_t first : {0, 3}) {
            for (const int64_t n : {0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 96, 104}) {
                std::fill(buffer.begin(), buffer.end(), uint8_t{0xAA});
                quantize_q4_0_avx2(x.data() + first * kB, base + shift, n);
                const std::vector<uint8_t> got(base + shift, base + shift + n * kBytes);
                const std::vector<uint8_t> expect(want.begin() + first * kBytes, want.begin() + (first + n) * kBytes);
                ASSERT_TRUE(test::same_items(got, expect)) << "shift " << shift << " first " << first << " n " << n;
                ASSERT_EQ(base[shift + n * kBytes], 0xAA) << "wrote past the end: shift " << shift << " n " << n;
                if (shift > 0) ASSERT_EQ(base[shift - 1], 0xAA) << "wrote before the start: shift " << shift << " n " << n;
            }
        }
    }
}

TEST(GgufQ4_0Avx2, GgufQuantizeMatchesTheGgufPyTranscriptionOnOddShapes) {
    // Through gguf_quantize (threads split the blocks anywhere, not on tiles): the reference
    // transcription of gguf-py, on finite non-subnormal data where ggml is well defined.
    for (const int64_t cols : {32, 96, 4096 + 64}) {
        const int64_t rows = 37;
        auto x = test::mixed_tensor(rows, cols, 5);
        for (auto& v : x)
            if (std::fpclassify(v) == FP_SUBNORMAL) v = 0.0f;
        std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols / kB * kBytes));
        gguf_quantize(x.data(), rows, cols, GgufType::Q4_0, bytes.data());
        EXPECT_TRUE(test::same_items(bytes, reference::gguf(x, rows, cols, reference::Gguf::Q4_0).bytes)) << cols;
    }
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

TEST(GgufQ5_0Avx2, EqualsThePortableEncoderOnAwkwardBlocksAtAnyAlignment) {
    if (!q4_0_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    constexpr int kQ5Bytes = 22;
    const int64_t nb = 8 * 4000 + 5;
    const auto x = awkward_blocks(nb, 8);
    std::vector<uint8_t> want(static_cast<size_t>(nb * kQ5Bytes));
    for (int64_t b = 0; b < nb; ++b) gguf_codec::q5_0_encode(x.data() + b * kB, want.data() + b * kQ5Bytes);
    std::vector<uint8_t> buffer(want.size() + 128);
    uint8_t* base = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
    for (const int64_t shift : {0, 1, 2, 22, 40, 63}) {
        std::fill(buffer.begin(), buffer.end(), uint8_t{0xAA});
        quantize_q5_0_avx2(x.data(), base + shift, nb);
        ASSERT_TRUE(test::same_items(std::vector<uint8_t>(base + shift, base + shift + want.size()), want)) << "shift " << shift;
        ASSERT_EQ(base[shift + want.size()], 0xAA) << "wrote past the end: shift " << shift;
    }
}

}  // namespace
}  // namespace ql::kernels
