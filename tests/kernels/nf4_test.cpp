// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nf4.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

// torch.bucketize(s, (book[:-1] + book[1:]) / 2): the number of float32 midpoints below s.
int literal_bucketize(const float* book, int n, float s) {
    int code = 0;
    for (int c = 0; c + 1 < n; ++c)
        if (s > (book[c] + book[c + 1]) / 2.0f) code = c + 1;
    return code;
}

TEST(Nf4Codebook, ThresholdsAreTheFloat32Midpoints) {
    // Around every decision threshold, and on a dense stride of [-1, 1].
    std::vector<float> probes;
    for (int i = 0; i < 15; ++i) {
        float t = nf4_thresholds()[i];
        for (int k = 0; k < 300; ++k) {
            probes.push_back(t);
            t = std::nextafter(t, 2.0f);
        }
        t = nf4_thresholds()[i];
        for (int k = 0; k < 300; ++k) {
            probes.push_back(t);
            t = std::nextafter(t, -2.0f);
        }
        probes.push_back((kNf4Codebook[i] + kNf4Codebook[i + 1]) / 2);
    }
    for (int k = 0; k <= 2000000; ++k) probes.push_back(-1.0f + 2.0f * static_cast<float>(k) / 2000000.0f);
    probes.push_back(std::numeric_limits<float>::quiet_NaN());
    for (float s : probes) ASSERT_EQ(nf4_code_of(s), literal_bucketize(kNf4Codebook, 16, s)) << s;
}

TEST(Nf4Codebook, DynamicMapCodesAreTheNearestEntry) {
    for (int i = 0; i < 255; ++i) {
        float t = dynamic_map_thresholds()[i];
        for (int k = 0; k < 50; ++k) t = std::nextafter(t, -2.0f);
        for (int k = 0; k < 100; ++k) {
            ASSERT_EQ(dynamic_map_code_of(t), literal_bucketize(kDynamicMapSigned, 256, t)) << t;
            t = std::nextafter(t, 2.0f);
        }
    }
    for (int i = 1; i < 256; ++i) ASSERT_LT(kDynamicMapSigned[i - 1], kDynamicMapSigned[i]) << "map must ascend";
}

TEST(Nf4Codec, MatchesReferenceWithTail) {
    for (int64_t n : {int64_t{64 * 300}, int64_t{64 * 50 + 17}}) {
        auto x = test::mixed_tensor(1, n, 41);
        std::vector<float> y(x.size()), dec(x.size());
        std::vector<uint8_t> codes(x.size());
        std::vector<float> absmax(static_cast<size_t>((n + 63) / 64));
        nf4_fake_quant(x.data(), y.data(), n, kNf4Block);
        nf4_encode(x.data(), n, kNf4Block, codes.data(), absmax.data());
        nf4_decode(codes.data(), absmax.data(), n, kNf4Block, dec.data());
        const auto ref = reference::nf4(x, kNf4Block, kNf4Codebook);
        EXPECT_TRUE(test::same_items(codes, ref.codes));
        EXPECT_TRUE(test::same_values(absmax, ref.scales));
        EXPECT_TRUE(test::same_values(y, ref.values));
        EXPECT_TRUE(test::same_values(dec, ref.values));
    }
}

TEST(Nf4Codec, CascadeMeanFollowsAtenSummationOrder) {
    // Hand-checkable: for n < 32 everything lands in the scalar tail loop or the lane sums.
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    EXPECT_EQ(aten_float_mean(x.data(), 9), 5.0f);
    // Large sums stay close to the exact mean (the cascade keeps partial sums balanced).
    std::vector<float> big(100000, 0.1f);
    EXPECT_NEAR(aten_float_mean(big.data(), 100000), 0.1f, 1e-7f);
}

TEST(Nf4Codec, ZeroBlockNanAndInf) {
    std::vector<float> x(128, 0.0f);
    x[70] = std::numeric_limits<float>::quiet_NaN();
    x[71] = 2.0f;
    x[72] = -INFINITY;
    std::vector<float> y(128);
    std::vector<uint8_t> codes(128);
    std::vector<float> absmax(2);
    nf4_fake_quant(x.data(), y.data(), 128, 64);
    nf4_encode(x.data(), 128, 64, codes.data(), absmax.data());
    for (int i = 0; i < 64; ++i) {
        EXPECT_EQ(y[i], 0.0f);
        EXPECT_EQ(codes[i], 7);  // the 0.0 entry
    }
    EXPECT_TRUE(std::isnan(y[70]));
    EXPECT_EQ(absmax[1], 2.0f);
    EXPECT_EQ(y[71], 2.0f);
    EXPECT_EQ(y[72], -2.0f);
    EXPECT_EQ(codes[72], 0);
}

TEST(Nf4Codec, DoubleQuantReconstructsAbsmaxClosely) {
    auto x = test::mixed_tensor(1, 64 * 600, 42);
    for (auto& v : x) v = std::isfinite(v) ? std::fmod(v, 3.0f) : 0.0f;
    const int64_t n = static_cast<int64_t>(x.size()), nb = n / 64;
    std::vector<uint8_t> codes(x.size()), c8(static_cast<size_t>(nb));
    std::vector<float> absmax(static_cast<size_t>(nb)), a2(3), back(static_cast<size_t>(nb));
    float offset = 0;
    nf4_encode(x.data(), n, 64, codes.data(), absmax.data());
    nf4_double_quant(absmax.data(), nb, c8.data(), a2.data(), &offset);
    nf4_double_dequant(c8.data(), a2.data(), offset, nb, back.data());
    double mean = 0;
    for (float a : absmax) mean += a;
    EXPECT_NEAR(offset, mean / nb, 1e-6 * mean / nb);
    EXPECT_EQ(offset, aten_float_mean(absmax.data(), nb));
    for (int64_t i = 0; i < nb; ++i) {
        EXPECT_EQ(back[i], kDynamicMapSigned[c8[i]] * a2[i / 256] + offset);
        EXPECT_NEAR(back[i], absmax[i], 0.02 * a2[i / 256] + 1e-6) << i;  // 8-bit dynamic map error bound
        const bool tail = i / 256 == nb / 256 && nb % 256 != 0;
        const float c = absmax[i] - offset;
        const float s = std::max(-1.0f, std::min(1.0f, tail ? c / a2[i / 256] : c * (1.0f / a2[i / 256])));
        EXPECT_EQ(c8[i], literal_bucketize(kDynamicMapSigned, 256, s));
    }
    std::vector<float> y(x.size());
    nf4_fake_quant_double(x.data(), y.data(), n, 64);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], kNf4Codebook[codes[i]] * back[i / 64]);
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

TEST(Nf4Codec, InPlaceDoubleQuantKeepsNaN) {
    auto x = test::mixed_tensor(1, 64 * 10, 43);
    x[100] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> out(x.size());
    nf4_fake_quant_double(x.data(), out.data(), 640, 64);
    nf4_fake_quant_double(x.data(), x.data(), 640, 64);
    EXPECT_TRUE(std::isnan(x[100]));
    EXPECT_TRUE(test::same_values(x, out));
}

}  // namespace
}  // namespace ql::kernels

namespace ql::kernels {
namespace {

// Blocks of 64 whose first element (1) sets the absmax, holding 30 floats on either side of every
// threshold, the codebook values and -0, in whole tiles of eight blocks.
std::vector<float> threshold_neighbourhoods() {
    std::vector<float> x;
    auto push = [&](float v) {
        if (x.size() % 64 == 0) x.push_back(1.0f);  // the block's absmax
        x.push_back(v);
    };
    for (int i = 0; i < 15; ++i) {
        float up = nf4_thresholds()[i], down = up;
        for (int k = 0; k < 30; ++k) {
            push(up);
            push(down);
            up = std::nextafter(up, 2.0f);
            down = std::nextafter(down, -2.0f);
        }
    }
    for (int i = 0; i < 16; ++i) push(kNf4Codebook[i]);
    push(-0.0f);
    while (x.size() % (64 * 8) != 0) push(0.5f);  // whole tiles of eight blocks
    return x;
}

// The fused block-of-64 path (bisection over the thresholds, nf4.cpp) on blocks whose absmax is
// exactly 1, so that every element's scaled value is the element itself: each threshold and
// 30 floats either side of it, and the codebook values, give the codebook entry of
// torch.bucketize's code.
TEST(Nf4Codec, FusedBlocksRoundEveryThresholdNeighbourhoodAsBucketize) {
    const std::vector<float> x = threshold_neighbourhoods();
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size());
    nf4_fake_quant(x.data(), y.data(), n, kNf4Block);
    for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(test::bits_of(y[i]), test::bits_of(kNf4Codebook[literal_bucketize(kNf4Codebook, 16, x[i])]))
            << "element " << i << " = " << x[i];
}

// nf4_fake_quant_double fuses encode, double quantization and decode; it must equal them
// composed, bit for bit (NaN as the canonical quiet NaN decoding writes), for the tiled
// block of 64, other blocks, short last blocks, specials, and in place.
std::vector<float> composed_double(const std::vector<float>& x, int64_t block) {
    const int64_t n = static_cast<int64_t>(x.size()), nb = (n + block - 1) / block;
    std::vector<uint8_t> codes(x.size()), c8(static_cast<size_t>(nb));
    std::vector<float> absmax(static_cast<size_t>(nb)), back(static_cast<size_t>(nb)), y(x.size());
    std::vector<float> a2(static_cast<size_t>((nb + 255) / 256));
    float offset = 0;
    nf4_encode(x.data(), n, block, codes.data(), absmax.data());
    nf4_double_quant(absmax.data(), nb, c8.data(), a2.data(), &offset);
    nf4_double_dequant(c8.data(), a2.data(), offset, nb, back.data());
    nf4_decode(codes.data(), back.data(), n, block, y.data());
    for (int64_t i = 0; i < n; ++i)
        if (std::isnan(x[i])) y[i] = std::numeric_limits<float>::quiet_NaN();
    return y;
}

TEST(Nf4Codec, FusedDoubleQuantEqualsTheComposedCodecBitForBit) {
    for (int64_t block : {int64_t{64}, int64_t{128}, int64_t{37}})
        for (int64_t n : {int64_t{64 * 1000}, int64_t{64 * 999 + 23}, int64_t{64 * 8}, int64_t{5}}) {
            auto x = test::mixed_tensor(7, (n + 6) / 7, static_cast<uint32_t>(block + n));
            x.resize(static_cast<size_t>(n));
            for (int64_t i = 3; i < n; i += 997) x[i] = std::numeric_limits<float>::quiet_NaN();
            for (int64_t i = 11; i < n; i += 1499) x[i] = i % 2 ? INFINITY : -INFINITY;
            for (int64_t i = 2 * block; i < std::min(n, 3 * block); ++i)  // a block of NaN: absmax 0
                x[i] = std::numeric_limits<float>::quiet_NaN();
            const std::vector<float> want = composed_double(x, block);
            std::vector<float> y(x.size());
            nf4_fake_quant_double(x.data(), y.data(), n, block);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(test::bits_of(y[i]), test::bits_of(want[i])) << "block " << block << ", n " << n << ", element " << i;
            nf4_fake_quant_double(x.data(), x.data(), n, block);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_EQ(test::bits_of(x[i]), test::bits_of(want[i])) << "in place: block " << block << ", n " << n;
        }
}

// The two-pass path of blocks of 64 (codes in the absmax pass) rounds like the scalar encoder
// at every threshold.
TEST(Nf4Codec, FusedDoubleQuantRoundsEveryThresholdNeighbourhoodAsTheComposedCodec) {
    std::vector<float> x = threshold_neighbourhoods();
    for (size_t i = 64 * 3 + 5; i < x.size(); i += 64 * 5) x[i] = std::numeric_limits<float>::quiet_NaN();
    const int64_t n = static_cast<int64_t>(x.size());
    const std::vector<float> want = composed_double(x, kNf4Block);
    std::vector<float> y(x.size());
    nf4_fake_quant_double(x.data(), y.data(), n, kNf4Block);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(test::bits_of(y[i]), test::bits_of(want[i])) << "element " << i << " = " << x[i];
}

}  // namespace
}  // namespace ql::kernels
