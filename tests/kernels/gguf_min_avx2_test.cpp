// SPDX-License-Identifier: GPL-3.0-or-later
// The AVX2 Q4_1 / Q5_1 encoders (gguf_min_avx2.h) against the portable block encoders, byte for
// byte, on blocks where the two compute differently: zero and signed-zero extremes, NaN/Inf,
// constant blocks, subnormal and overflowing ranges, heavy tails. A single block per call runs the
// portable encoder (a tile needs eight); whole tensors run the tiles. (The ggml oracle for both:
// tests/peers/ggml_oracle_test.cpp.)
#include <cmath>
#include <limits>
#include <random>

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_min_avx2.h"
#include "kernels/gguf_q5_1.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

constexpr int kB = 32;

std::vector<float> awkward_blocks(int64_t nblocks, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(1e-6f, 1.0f);
    std::uniform_int_distribution<int> pos(0, kB - 1), kind_dist(0, 13), exp_dist(-149, 127);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x(static_cast<size_t>(nblocks * kB));
    for (int64_t b = 0; b < nblocks; ++b) {
        float* v = x.data() + b * kB;
        const float scale = std::ldexp(1.0f, exp_dist(rng) / 2);
        for (int i = 0; i < kB; ++i) v[i] = normal(rng) * scale;
        const int i = pos(rng), j = pos(rng);
        switch (kind_dist(rng)) {
            case 0: for (int k = 0; k < kB; ++k) v[k] = std::fabs(v[k]); v[i] = (rng() & 1) ? 0.0f : -0.0f; break;  // zero min
            case 1: for (int k = 0; k < kB; ++k) v[k] = -std::fabs(v[k]); v[j] = (rng() & 1) ? 0.0f : -0.0f; break;  // zero max
            case 2: v[i] = nan; break;
            case 3: v[i] = (rng() & 1) ? inf : -inf; break;
            case 4: for (int k = 0; k < kB; ++k) v[k] = (rng() & 1) ? 0.0f : -0.0f; break;
            case 5: for (int k = 0; k < kB; ++k) v[k] = -0.8125f * scale; break;  // constant: d = 0
            case 6: for (int k = 0; k < kB; ++k) v[k] = test::float_of(static_cast<uint32_t>(rng() & 0x807FFFFFu)); break;
            case 7: v[i] = 3e38f, v[j] = -3e38f; break;  // max - min overflows
            case 8: for (int k = 0; k < kB; ++k) v[k] = normal(rng) * scale / (unit(rng) * unit(rng)); break;
            case 9: for (int k = 0; k < kB; ++k) v[k] = 1.0f + std::ldexp(normal(rng), -130); break;  // subnormal d
            case 10: v[i] = 65520.0f * 31.0f, v[j] = -1.0f; break;  // fp16(d) overflow
            default: break;
        }
    }
    return x;
}

TEST(GgufMinAvx2, Q4_1TilesEqualThePortableEncoder) {
    if (!gguf_min_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 8 * 3000 + 5;
    const auto x = awkward_blocks(nb, 31);
    std::vector<uint8_t> whole(static_cast<size_t>(nb * 20)), single(whole.size());
    gguf_quantize(x.data(), 1, nb * kB, GgufType::Q4_1, whole.data());
    for (int64_t b = 0; b < nb; ++b) gguf_quantize(x.data() + b * kB, 1, kB, GgufType::Q4_1, single.data() + b * 20);
    EXPECT_TRUE(test::same_items(whole, single));
}

TEST(GgufMinAvx2, Q5_1TilesEqualThePortableEncoder) {
    if (!gguf_min_avx2_available()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
    const int64_t nb = 8 * 3000 + 5;
    const auto x = awkward_blocks(nb, 32);
    std::vector<uint8_t> whole(static_cast<size_t>(nb * kGgufQ5_1BlockBytes)), single(whole.size());
    gguf_q5_1_quantize(x.data(), 1, nb * kB, whole.data());
    for (int64_t b = 0; b < nb; ++b)
        gguf_q5_1_quantize(x.data() + b * kB, 1, kB, single.data() + b * kGgufQ5_1BlockBytes);
    EXPECT_TRUE(test::same_items(whole, single));
}

}  // namespace
}  // namespace ql::kernels
