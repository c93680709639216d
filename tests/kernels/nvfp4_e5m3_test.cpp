// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 with E5M3 block scales: the UE5M3 scale byte's rounding at its edges, every byte's value,
// and one block through fake quantization, encoding and decoding (the bit-for-bit check against
// AutoRound's own quantizer is tests/app/cli_format_peers_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/nvfp4_e5m3.h"

namespace ql::kernels {
namespace {

TEST(Ue5m3, EveryFiniteByteDecodesToItsGridValueAndEncodesBack) {
    for (int c = 0; c < 255; ++c) {
        const unsigned e = static_cast<unsigned>(c) >> 3, m = static_cast<unsigned>(c) & 7u;
        const double want = e == 0 ? m / 8.0 * std::ldexp(1.0, -14) : (1 + m / 8.0) * std::ldexp(1.0, static_cast<int>(e) - 15);
        EXPECT_EQ(ue5m3_decode(static_cast<uint8_t>(c)), static_cast<float>(want)) << c;
        EXPECT_EQ(ue5m3_encode(ue5m3_decode(static_cast<uint8_t>(c))), c) << c;
    }
    EXPECT_TRUE(std::isnan(ue5m3_decode(0xFF)));
    EXPECT_EQ(ue5m3_decode(0xFE), kUe5m3Max);
    EXPECT_EQ(UE5M3::max_finite(), kUe5m3Max);
}

TEST(Ue5m3, RoundsHalfToEvenCarriesAndSaturates) {
    EXPECT_EQ(ue5m3_encode(0.0f), 0);
    EXPECT_EQ(ue5m3_decode(ue5m3_encode(1.0625f)), 1.0f);     // midpoint of 1 and 1.125: even mantissa 0
    EXPECT_EQ(ue5m3_decode(ue5m3_encode(1.1875f)), 1.25f);    // midpoint of 1.125 and 1.25: even mantissa 2
    EXPECT_EQ(ue5m3_decode(ue5m3_encode(1.95f)), 2.0f);       // carries into the next power of two
    EXPECT_EQ(ue5m3_decode(ue5m3_encode(1.9f)), 1.875f);
    EXPECT_EQ(ue5m3_encode(1e9f), 0xFE);                      // saturates at 114688
    EXPECT_EQ(ue5m3_encode(std::ldexp(1.0f, -18)), 0);        // half the smallest subnormal: to even 0
    EXPECT_EQ(ue5m3_encode(std::ldexp(3.0f, -18)), 2);        // between subnormals 1 and 2: even 2
    EXPECT_EQ(ue5m3_encode(std::ldexp(15.0f, -18)), 0x08);    // the largest subnormal carries to 2^-14
    EXPECT_EQ(ue5m3_decode(0x01), std::ldexp(1.0f, -17));
}

TEST(Nvfp4E5m3, OneBlockRoundTripsThroughItsScaleWithoutAGlobalScale) {
    // amax 12 -> s = 2 exactly (byte 0x80): elements on E2M1's grid times 2 pass unchanged, others round.
    std::vector<float> x = {12.0f, -12.0f, 1.0f, 2.5f, 3.0f, -4.0f, 0.4f, 0.6f, 8.0f, 6.0f, 0.0f, -0.0f, 5.0f, 7.0f, 10.0f, 11.0f};
    const std::vector<float> want = {12.0f, -12.0f, 1.0f, 2.0f, 3.0f, -4.0f, 0.0f, 1.0f, 8.0f, 6.0f, 0.0f, -0.0f, 4.0f, 8.0f, 8.0f, 12.0f};
    const RowBlocks L{1, 16, kNvfp4E5m3Block};
    std::vector<float> y(16), back(16);
    std::vector<uint8_t> codes(16), scale(1);
    nvfp4_e5m3_fake_quant(x.data(), y.data(), L);
    nvfp4_e5m3_encode(x.data(), L, codes.data(), scale.data());
    nvfp4_e5m3_decode(codes.data(), scale.data(), L, back.data());
    EXPECT_EQ(scale[0], 0x80);
    for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(y[i], want[i]) << i;
        EXPECT_EQ(back[i], want[i]) << i;
    }
    EXPECT_EQ(codes[1], 8u | 7u);  // -6 * 2
}

TEST(Nvfp4E5m3, TinyAndHugeBlocksKeepTheirOwnScale) {
    // Two blocks 10^12 apart in one row: each gets its own scale (NVFP4's E4M3 scales under one
    // global scale would zero the small block).
    std::vector<float> x(32);
    for (int i = 0; i < 16; ++i) x[i] = 1e-4f * static_cast<float>(i - 8);
    for (int i = 16; i < 32; ++i) x[i] = 1e8f * static_cast<float>(i - 24);
    const RowBlocks L{1, 32, kNvfp4E5m3Block};
    std::vector<float> y(32);
    nvfp4_e5m3_fake_quant(x.data(), y.data(), L);
    EXPECT_NE(y[1], 0.0f);
    EXPECT_NEAR(y[1], x[1], 0.25 * std::fabs(x[1]));
    // 8e8 / 6 is far above 114688: the scale saturates and the large block clips at 6 * 114688.
    EXPECT_EQ(y[31], 6.0f * kUe5m3Max);
    // NaN stays NaN in its element; Inf saturates; neither changes the block's scale.
    std::vector<float> z = {1.0f, NAN, INFINITY, -INFINITY, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3.0f};
    std::vector<float> zq(16);
    nvfp4_e5m3_fake_quant(z.data(), zq.data(), RowBlocks{1, 16, kNvfp4E5m3Block});
    EXPECT_TRUE(std::isnan(zq[1]));
    EXPECT_EQ(zq[2], 3.0f);  // amax 3 -> s = 0.5, Inf -> 6 * 0.5
    EXPECT_EQ(zq[3], -3.0f);
    EXPECT_EQ(zq[0], 1.0f);
    EXPECT_EQ(zq[15], 3.0f);
}

}  // namespace
}  // namespace ql::kernels
