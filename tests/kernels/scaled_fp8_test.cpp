// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/channel_reduce.h"
#include "kernels/reference/reference_formats.h"
#include "kernels/scaled_fp8.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

TEST(ScaledFp8, PerTensorMatchesReference) {
    for (auto [kind, ref] : {std::pair{Fp8Kind::E4M3, reference::Element::E4M3},
                             std::pair{Fp8Kind::E5M2, reference::Element::E5M2}}) {
        auto x = test::mixed_tensor(64, 333, 21);
        for (auto& v : x) v *= 1e-3f;  // keep the tensor amax from drowning every row
        const int64_t n = static_cast<int64_t>(x.size());
        const float scale = fp8_scale_for_amax(finite_absmax(x.data(), n), kind);
        std::vector<float> y(x.size()), dec(x.size());
        std::vector<uint8_t> codes(x.size());
        const ChannelLayout L{1, 1, n};
        fp8_fake_quant(x.data(), y.data(), L, &scale, kind);
        fp8_encode(x.data(), L, &scale, kind, codes.data());
        fp8_decode(codes.data(), L, &scale, kind, dec.data());
        const auto r = reference::fp8_tensor(x, ref);
        EXPECT_EQ(test::bits_of(scale), test::bits_of(r.scales[0]));
        EXPECT_TRUE(test::same_items(codes, r.codes));
        EXPECT_TRUE(test::same_values(y, r.values));
        EXPECT_TRUE(test::same_values(dec, r.values));
    }
}

TEST(ScaledFp8, PerChannelUsesEachChannelsScale) {
    // [4, 3, 5] with channels on axis 1 and on the last axis.
    const auto x = test::mixed_tensor(12, 5, 22);
    for (const ChannelLayout L : {ChannelLayout{4, 3, 5}, ChannelLayout{12, 5, 1}}) {
        std::vector<float> amax(static_cast<size_t>(L.channels)), scales(static_cast<size_t>(L.channels));
        channel_finite_absmax(x.data(), L, amax.data());
        for (int64_t c = 0; c < L.channels; ++c) scales[c] = fp8_scale_for_amax(amax[c], Fp8Kind::E4M3);
        std::vector<float> y(x.size());
        fp8_fake_quant(x.data(), y.data(), L, scales.data(), Fp8Kind::E4M3);
        for (int64_t i = 0; i < L.elements(); ++i) {
            const int64_t c = (i / L.inner) % L.channels;
            std::vector<float> one = {x[i] / scales[c]};
            const float want = reference::element_value(reference::Element::E4M3,
                                                        reference::element_encode(reference::Element::E4M3, one[0])) *
                               scales[c];
            ASSERT_EQ(y[i], want) << i;
        }
    }
}

TEST(ScaledFp8, ZeroAmaxGivesScaleOneAndZeros) {
    EXPECT_EQ(fp8_scale_for_amax(0.0f, Fp8Kind::E4M3), 1.0f);
    EXPECT_EQ(fp8_scale_for_amax(448.0f, Fp8Kind::E4M3), 1.0f);
    EXPECT_EQ(fp8_scale_for_amax(57344.0f, Fp8Kind::E5M2), 1.0f);
}

TEST(ChannelReduce, StatisticsSkipNanAndInf) {
    std::vector<float> x = {1, -7, std::numeric_limits<float>::quiet_NaN(), INFINITY, 3, -INFINITY};
    EXPECT_EQ(finite_absmax(x.data(), 6), 7.0f);
    float lo, hi;
    finite_range(x.data(), 6, &lo, &hi);
    EXPECT_EQ(lo, -7.0f);
    EXPECT_EQ(hi, 3.0f);
    std::vector<float> pos = {2, 5};
    finite_range(pos.data(), 2, &lo, &hi);
    EXPECT_EQ(lo, 0.0f);  // the range always contains zero
    EXPECT_EQ(hi, 5.0f);
}

TEST(ChannelReduce, ParallelMatchesSerialForEveryAxis) {
    const auto x = test::mixed_tensor(96, 1000, 23);
    for (const ChannelLayout L : {ChannelLayout{1, 96, 1000}, ChannelLayout{96, 1000, 1}, ChannelLayout{8, 12, 1000},
                                  ChannelLayout{1, 1, 96000}}) {
        std::vector<float> amax(static_cast<size_t>(L.channels)), lo(amax.size()), hi(amax.size());
        channel_finite_absmax(x.data(), L, amax.data());
        channel_finite_range(x.data(), L, lo.data(), hi.data());
        std::vector<float> want_amax(amax.size(), 0.0f), want_lo(amax.size(), 0.0f), want_hi(amax.size(), 0.0f);
        for (int64_t i = 0; i < L.elements(); ++i) {
            const int64_t c = (i / L.inner) % L.channels;
            want_amax[c] = std::max(want_amax[c], std::fabs(x[i]));
            want_lo[c] = std::min(want_lo[c], x[i]);
            want_hi[c] = std::max(want_hi[c], x[i]);
        }
        EXPECT_TRUE(test::same_values(amax, want_amax));
        EXPECT_TRUE(test::same_values(lo, want_lo));
        EXPECT_TRUE(test::same_values(hi, want_hi));
    }
}

}  // namespace
}  // namespace ql::kernels
