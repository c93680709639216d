// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/channel_reduce.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

struct Nvfp4Run {
    std::vector<float> fake, decoded;
    std::vector<uint8_t> codes, scales;
};

Nvfp4Run run_nvfp4(const std::vector<float>& x, int64_t rows, int64_t cols, float g) {
    const RowBlocks L{rows, cols, kNvfp4Block};
    Nvfp4Run r;
    r.fake.resize(x.size());
    r.decoded.resize(x.size());
    r.codes.resize(x.size());
    r.scales.resize(static_cast<size_t>(L.block_count()));
    nvfp4_fake_quant(x.data(), r.fake.data(), L, g);
    nvfp4_encode(x.data(), L, g, r.codes.data(), r.scales.data());
    nvfp4_decode(r.codes.data(), r.scales.data(), L, g, r.decoded.data());
    return r;
}

void expect_matches_reference(const std::vector<float>& x, int64_t rows, int64_t cols) {
    const float g = nvfp4_global_scale(finite_absmax(x.data(), static_cast<int64_t>(x.size())));
    const Nvfp4Run r = run_nvfp4(x, rows, cols, g);
    const auto ref = reference::nvfp4(x, rows, cols, g);
    EXPECT_TRUE(test::same_items(r.codes, ref.codes));
    EXPECT_TRUE(test::same_items(r.scales, ref.scale_codes));
    EXPECT_TRUE(test::same_values(r.fake, ref.values));
    // Decoding the codes gives the fake-quantized values (NaN inputs aside).
    std::vector<float> fake_no_nan = r.fake;
    for (size_t i = 0; i < x.size(); ++i)
        if (std::isnan(x[i])) fake_no_nan[i] = r.decoded[i];
    EXPECT_TRUE(test::same_values(r.decoded, fake_no_nan));
}

// The threshold count the encoder uses equals rounding onto the E2M1 grid (RNE, saturating) at
// every grid point, every midpoint (the ties) and 64 floats either side of each.
TEST(Nvfp4Codec, MagnitudeCodeByThresholdsEqualsGridRounding) {
    const float points[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 1e30f};
    for (float p : points) {
        float up = p, down = p;
        for (int i = 0; i < 64; ++i, up = std::nextafter(up, INFINITY), down = std::nextafter(down, 0.0f)) {
            EXPECT_EQ(e2m1_magnitude_code(up), grid_code<E2M1>(round_to_grid<E2M1>(up))) << up;
            EXPECT_EQ(e2m1_magnitude_code(down), grid_code<E2M1>(round_to_grid<E2M1>(down))) << down;
        }
    }
    EXPECT_EQ(e2m1_magnitude_code(INFINITY), 7u);
    EXPECT_EQ(e2m1_magnitude_code(1.25f), 2u);  // tie: 1.0 (code 2), not 1.5 (code 3)
    EXPECT_EQ(e2m1_magnitude_code(1.75f), 4u);  // tie: 2.0 (code 4), not 1.5 (code 3)
}

TEST(Nvfp4Codec, MatchesReferenceOnMixedData) { expect_matches_reference(test::mixed_tensor(64, 256, 1), 64, 256); }

TEST(Nvfp4Codec, MatchesReferenceOnLargeParallelInput) {
    expect_matches_reference(test::mixed_tensor(512, 1024, 2), 512, 1024);
}

TEST(Nvfp4Codec, TailBlockBehavesAsZeroPadded) {
    const auto x = test::mixed_tensor(21, 37, 3);  // 37 = 2 full blocks + 5
    expect_matches_reference(x, 21, 37);
    // Padding the row with zeros to 48 gives the same values for the real elements.
    std::vector<float> padded(21 * 48, 0.0f);
    for (int r = 0; r < 21; ++r)
        for (int c = 0; c < 37; ++c) padded[r * 48 + c] = x[r * 37 + c];
    const float g = nvfp4_global_scale(finite_absmax(x.data(), static_cast<int64_t>(x.size())));
    const auto a = run_nvfp4(x, 21, 37, g), b = run_nvfp4(padded, 21, 48, g);
    for (int r = 0; r < 21; ++r)
        for (int c = 0; c < 37; ++c) ASSERT_EQ(a.fake[r * 37 + c], b.fake[r * 48 + c]);
}

TEST(Nvfp4Codec, HandComputedBlock) {
    // amax 6 -> g = 6/2688; block amax 6 -> s = 6/(6g) = 448 -> E4M3 0x7E; d = 448 g = 1.
    std::vector<float> x = {6, -6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -5, 0.1f, -0.1f, 0, -0.0f, 2.9f, 4.1f};
    const float g = nvfp4_global_scale(6.0f);
    EXPECT_EQ(g, 6.0f / 2688.0f);
    const auto r = run_nvfp4(x, 1, 16, g);
    EXPECT_EQ(r.scales[0], 0x7E);
    const float d = 448.0f * g;
    const std::vector<float> want = {6, -6, 0, 1, 1, 2, 2, 4, 4, -4, 0, -0.0f, 0, 0, 3, 4};
    for (int i = 0; i < 16; ++i) EXPECT_EQ(r.fake[i], want[i] * d) << i;
    const std::vector<uint8_t> codes = {7, 15, 0, 2, 2, 4, 4, 6, 6, 14, 0, 8, 0, 0, 5, 6};
    EXPECT_TRUE(test::same_items(r.codes, codes));
}

TEST(Nvfp4Codec, ZeroTensorAllEqualBlockAndTinyBlock) {
    std::vector<float> zeros(32, 0.0f);
    auto r = run_nvfp4(zeros, 1, 32, nvfp4_global_scale(0.0f));
    for (float v : r.fake) EXPECT_EQ(v, 0.0f);
    for (uint8_t c : r.codes) EXPECT_EQ(c, 0);

    std::vector<float> x(32, 0.5f);
    x[16] = 1000.0f;  // second block holds the tensor amax
    x[0] = 1e-6f;     // first block: amax 0.5, fine
    for (int i = 1; i < 16; ++i) x[i] = 1e-6f;  // first block becomes tiny: its scale rounds to 0
    const float g = nvfp4_global_scale(1000.0f);
    r = run_nvfp4(x, 1, 32, g);
    EXPECT_EQ(r.scales[0], 0);  // E4M3 of 1e-6/(6g) underflows
    for (int i = 0; i < 16; ++i) EXPECT_EQ(r.fake[i], 0.0f);
    expect_matches_reference(x, 1, 32);
}

TEST(Nvfp4Codec, NanStaysInItsElementAndInfSaturates) {
    std::vector<float> x = test::mixed_tensor(2, 32, 4);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[20] = INFINITY;
    x[21] = -INFINITY;
    const float g = nvfp4_global_scale(finite_absmax(x.data(), 64));
    const auto r = run_nvfp4(x, 2, 32, g);
    EXPECT_TRUE(std::isnan(r.fake[3]));
    for (int i = 0; i < 64; ++i)
        if (i != 3) EXPECT_FALSE(std::isnan(r.fake[i])) << i;
    EXPECT_EQ(r.codes[3], 7);
    EXPECT_EQ(r.codes[20], 7);
    EXPECT_EQ(r.codes[21], 15);
    expect_matches_reference(x, 2, 32);
}

TEST(Nvfp4Codec, InPlaceEqualsOutOfPlace) {
    auto x = test::mixed_tensor(16, 64, 5);
    const float g = nvfp4_global_scale(finite_absmax(x.data(), 1024));
    const auto r = run_nvfp4(x, 16, 64, g);
    nvfp4_fake_quant(x.data(), x.data(), RowBlocks{16, 64, 16}, g);
    EXPECT_TRUE(test::same_values(x, r.fake));
}

}  // namespace
}  // namespace ql::kernels
