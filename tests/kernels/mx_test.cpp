// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/minifloat.h"
#include "kernels/mx.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

struct MxCase {
    MxElement element;
    reference::Element ref;
    bool is_int8;
    const char* name;
};

const MxCase kCases[] = {
    {MxElement::E4M3, reference::Element::E4M3, false, "mxfp8_e4m3"},
    {MxElement::E5M2, reference::Element::E5M2, false, "mxfp8_e5m2"},
    {MxElement::E3M2, reference::Element::E3M2, false, "mxfp6_e3m2"},
    {MxElement::E2M3, reference::Element::E2M3, false, "mxfp6_e2m3"},
    {MxElement::E2M1, reference::Element::E2M1, false, "mxfp4"},
    {MxElement::Int8, reference::Element::E4M3, true, "mxint8"},
};

void expect_matches_reference(const std::vector<float>& x, int64_t rows, int64_t cols, const MxCase& c,
                              MxScaleRule rule) {
    SCOPED_TRACE(c.name);
    const RowBlocks L{rows, cols, kMxBlock};
    std::vector<float> fake(x.size()), dec(x.size());
    std::vector<uint8_t> codes(x.size()), scales(static_cast<size_t>(L.block_count()));
    mx_fake_quant(x.data(), fake.data(), L, c.element, rule);
    mx_encode(x.data(), L, c.element, rule, codes.data(), scales.data());
    mx_decode(codes.data(), scales.data(), L, c.element, dec.data());
    const auto ref = reference::mx(x, rows, cols, c.ref, c.is_int8, rule == MxScaleRule::RoundUp);
    EXPECT_TRUE(test::same_items(scales, ref.scale_codes));
    EXPECT_TRUE(test::same_items(codes, ref.codes));
    EXPECT_TRUE(test::same_values(fake, ref.values));
    EXPECT_TRUE(test::same_values(dec, ref.values));
}

TEST(MxCodec, EveryElementTypeMatchesReferenceFloorRule) {
    const auto x = test::mixed_tensor(48, 256, 11);
    for (const auto& c : kCases) expect_matches_reference(x, 48, 256, c, MxScaleRule::Floor);
}

TEST(MxCodec, EveryElementTypeMatchesReferenceRoundUpRule) {
    const auto x = test::mixed_tensor(48, 256, 12);
    for (const auto& c : kCases) expect_matches_reference(x, 48, 256, c, MxScaleRule::RoundUp);
}

TEST(MxCodec, TailsAndLargeInputs) {
    const auto x = test::mixed_tensor(33, 70, 13);
    for (const auto& c : kCases) expect_matches_reference(x, 33, 70, c, MxScaleRule::Floor);
    const auto big = test::mixed_tensor(300, 1024, 14);
    expect_matches_reference(big, 300, 1024, kCases[4], MxScaleRule::Floor);
}

TEST(MxCodec, NanOrInfMakesTheWholeBlockNan) {
    auto x = test::mixed_tensor(1, 96, 15);
    x[5] = std::numeric_limits<float>::quiet_NaN();
    x[40] = -INFINITY;
    for (const auto& c : kCases) {
        expect_matches_reference(x, 1, 96, c, MxScaleRule::Floor);
        std::vector<float> y(96);
        mx_fake_quant(x.data(), y.data(), RowBlocks{1, 96, 32}, c.element, MxScaleRule::Floor);
        for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isnan(y[i])) << c.name << " " << i;
        for (int i = 64; i < 96; ++i) EXPECT_FALSE(std::isnan(y[i])) << c.name << " " << i;
    }
}

TEST(MxCodec, HandComputedMxfp4Block) {
    // amax 5 -> floor(log2 5) = 2 -> scale 2^(2-2) = 1 (byte 127): elements are E2M1 of x.
    std::vector<float> x(32, 0.0f);
    x[0] = 5.0f;   // 5 -> 4 (tie to even)
    x[1] = -2.6f;  // -> -3
    x[2] = 0.3f;   // -> 0.5
    std::vector<float> y(32);
    std::vector<uint8_t> codes(32), scale(1);
    mx_fake_quant(x.data(), y.data(), RowBlocks{1, 32, 32}, MxElement::E2M1, MxScaleRule::Floor);
    mx_encode(x.data(), RowBlocks{1, 32, 32}, MxElement::E2M1, MxScaleRule::Floor, codes.data(), scale.data());
    EXPECT_EQ(scale[0], 127);
    EXPECT_EQ(y[0], 4.0f);
    EXPECT_EQ(y[1], -3.0f);
    EXPECT_EQ(y[2], 0.5f);
    EXPECT_EQ(codes[0], 6);
    EXPECT_EQ(codes[1], 13);
    EXPECT_EQ(codes[2], 1);
    // The largest element can clip under the floor rule: amax 7.9 -> scale 2^(2-2) = 1 -> 6.
    x[0] = 7.9f;
    mx_fake_quant(x.data(), y.data(), RowBlocks{1, 32, 32}, MxElement::E2M1, MxScaleRule::Floor);
    EXPECT_EQ(y[0], 6.0f);
    // ... and not under rceil: scale 2^ceil(log2(7.9/6)) = 2 -> 8.
    mx_fake_quant(x.data(), y.data(), RowBlocks{1, 32, 32}, MxElement::E2M1, MxScaleRule::RoundUp);
    EXPECT_EQ(y[0], 8.0f);
}

TEST(MxCodec, MxInt8HandComputed) {
    std::vector<float> x(32, 0.0f);
    x[0] = 1.5f;     // amax: scale 2^0; k = 96
    x[1] = -0.01f;   // k = rne(-0.64) = -1
    x[2] = 1.99f;    // k = rne(127.36) = 127
    std::vector<float> y(32);
    std::vector<uint8_t> codes(32), scale(1);
    mx_encode(x.data(), RowBlocks{1, 32, 32}, MxElement::Int8, MxScaleRule::Floor, codes.data(), scale.data());
    mx_fake_quant(x.data(), y.data(), RowBlocks{1, 32, 32}, MxElement::Int8, MxScaleRule::Floor);
    EXPECT_EQ(scale[0], 127);
    EXPECT_EQ(static_cast<int8_t>(codes[0]), 96);
    EXPECT_EQ(static_cast<int8_t>(codes[1]), -1);
    EXPECT_EQ(static_cast<int8_t>(codes[2]), 127);
    EXPECT_EQ(y[0], 1.5f);
    EXPECT_EQ(y[1], -1.0f / 64);
    EXPECT_EQ(y[2], 127.0f / 64);
}

}  // namespace
}  // namespace ql::kernels
