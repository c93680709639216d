// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/channel_reduce.h"
#include "kernels/integer_quant.h"
#include "kernels/reference/reference_formats.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

struct IntRun {
    std::vector<float> fake, decoded;
    std::vector<uint8_t> codes;
    std::vector<float> scales;
};

IntRun run_groups(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group, IntFormat f) {
    const RowBlocks L{rows, cols, group};
    IntRun r;
    r.fake.resize(x.size());
    r.decoded.resize(x.size());
    r.codes.resize(x.size());
    std::vector<IntParams> p(static_cast<size_t>(L.block_count()));
    int_fake_quant_groups(x.data(), r.fake.data(), L, f);
    int_encode_groups(x.data(), L, f, r.codes.data(), p.data());
    int_decode_groups(r.codes.data(), p.data(), L, f, r.decoded.data());
    for (auto& q : p) r.scales.push_back(q.scale);
    return r;
}

IntRun run_rows(const std::vector<float>& x, int64_t rows, int64_t cols, IntFormat f) {
    const ChannelLayout L{1, rows, cols};
    std::vector<float> lo(static_cast<size_t>(rows)), hi(static_cast<size_t>(rows));
    channel_finite_range(x.data(), L, lo.data(), hi.data());
    std::vector<IntParams> p;
    for (int64_t r = 0; r < rows; ++r) p.push_back(int_params_for_range(lo[r], hi[r], f));
    IntRun r;
    r.fake.resize(x.size());
    r.decoded.resize(x.size());
    r.codes.resize(x.size());
    int_fake_quant_channels(x.data(), r.fake.data(), L, p.data(), f);
    int_encode_channels(x.data(), L, p.data(), f, r.codes.data());
    int_decode_channels(r.codes.data(), L, p.data(), f, r.decoded.data());
    for (auto& q : p) r.scales.push_back(q.scale);
    return r;
}

void expect_equal(const IntRun& r, const reference::Encoded& ref, const std::vector<float>& x) {
    EXPECT_TRUE(test::same_items(r.codes, ref.codes));
    EXPECT_TRUE(test::same_values(r.scales, ref.scales));
    EXPECT_TRUE(test::same_values(r.fake, ref.values));
    std::vector<float> dec_ref = ref.values;
    for (size_t i = 0; i < x.size(); ++i)
        if (std::isnan(x[i])) dec_ref[i] = r.decoded[i];
    EXPECT_TRUE(test::same_values(r.decoded, dec_ref));
}

TEST(IntegerQuant, GroupsMatchReferenceForEveryWidthAndMapping) {
    const auto x = test::mixed_tensor(40, 512, 31);
    for (int bits : {8, 4, 3, 2})
        for (bool asym : {false, true}) {
            SCOPED_TRACE(testing::Message() << "bits " << bits << " asym " << asym);
            expect_equal(run_groups(x, 40, 512, 128, IntFormat{bits, asym}),
                         reference::integer(x, 40, 512, bits, asym, 128), x);
        }
}

TEST(IntegerQuant, PerChannelMatchesReference) {
    const auto x = test::mixed_tensor(37, 300, 32);
    for (int bits : {8, 4})
        for (bool asym : {false, true})
            expect_equal(run_rows(x, 37, 300, IntFormat{bits, asym}), reference::integer(x, 37, 300, bits, asym, 0), x);
}

TEST(IntegerQuant, HandComputedSymmetricInt4) {
    // amax 7 -> scale 1: q = rne(x) clamped to [-7, 7].
    std::vector<float> x = {7, -7, 0.5f, 1.5f, -2.5f, 3.49f, 6.6f, -6.51f};
    const auto r = run_groups(x, 1, 8, 8, IntFormat{4, false});
    EXPECT_EQ(r.scales[0], 1.0f);
    EXPECT_TRUE(test::same_values(r.fake, std::vector<float>{7, -7, 0, 2, -2, 3, 7, -7}));
    EXPECT_EQ(static_cast<int8_t>(r.codes[1]), -7);
    EXPECT_EQ(static_cast<int8_t>(r.codes[2]), 0);
}

TEST(IntegerQuant, HandComputedAsymmetricUint8) {
    // range [-1, 3]: scale = 4/255, zp = rne(255/4) = 64 (63.75 -> 64).
    std::vector<float> x = {-1, 3, 0, 1};
    const auto r = run_groups(x, 1, 4, 4, IntFormat{8, true});
    EXPECT_EQ(r.scales[0], 4.0f / 255.0f);
    const float s = 4.0f / 255.0f;
    EXPECT_EQ(r.codes[2], 64);
    EXPECT_EQ(r.fake[2], 0.0f);
    EXPECT_EQ(r.codes[0], 0);  // rne(-63.75) + 64 = 0
    EXPECT_EQ(r.fake[0], -64.0f * s);
    EXPECT_EQ(r.codes[1], 255);
}

TEST(IntegerQuant, ZeroGroupNanAndInf) {
    std::vector<float> x(16, 0.0f);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    auto r = run_groups(x, 1, 16, 16, IntFormat{4, false});
    EXPECT_EQ(r.scales[0], 0.0f);
    for (int i = 0; i < 16; ++i)
        if (i != 3) EXPECT_EQ(r.fake[i], 0.0f);
    EXPECT_TRUE(std::isnan(r.fake[3]));
    x[3] = INFINITY;
    x[4] = 2.0f;
    r = run_groups(x, 1, 16, 16, IntFormat{4, false});
    EXPECT_EQ(r.fake[3], 2.0f);  // saturates at qmax * scale = amax of the finite values
    expect_equal(r, reference::integer(x, 1, 16, 4, false, 16), x);
    r = run_groups(x, 1, 16, 16, IntFormat{4, true});
    expect_equal(r, reference::integer(x, 1, 16, 4, true, 16), x);
}

}  // namespace
}  // namespace ql::kernels
