// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA integer quantization against the CPU kernels, bit for bit: groups (fast sizes, other
// sizes, tails) and channels, symmetric and asymmetric, every width.
#include "kernels/channel_reduce.h"
#include "kernels/integer_quant.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

const IntFormat kFormats[] = {{8, false}, {8, true}, {4, false}, {4, true},
                              {3, false}, {3, true}, {2, false}, {2, true}};

std::vector<float> scales_of(const std::vector<IntParams>& p) {
    std::vector<float> s;
    for (const auto& q : p) s.push_back(q.scale);
    return s;
}
std::vector<float> zero_points_of(const std::vector<IntParams>& p) {
    std::vector<float> s;
    for (const auto& q : p) s.push_back(q.zero_point);
    return s;
}

std::vector<IntParams> params_to_host(const test::DeviceBuffer<IntParams>& d) { return d.to_host(); }

void expect_groups_match(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group, IntFormat f,
                         size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << "bits " << f.bits << (f.asymmetric ? " asym" : " sym") << " shape " << rows
                                    << "x" << cols << " group " << group << " offset " << offset);
    const RowBlocks L{rows, cols, group};
    const size_t n = x.size(), nb = static_cast<size_t>(L.block_count());
    std::vector<float> fake(n), decoded(n);
    std::vector<uint8_t> codes(n);
    std::vector<IntParams> params(nb);
    int_fake_quant_groups(x.data(), fake.data(), L, f);
    int_encode_groups(x.data(), L, f, codes.data(), params.data());
    int_decode_groups(codes.data(), params.data(), L, f, decoded.data());

    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_fake(n, offset), d_decoded(n, offset);
    test::DeviceBuffer<uint8_t> d_codes(n, offset);
    test::DeviceBuffer<IntParams> d_params(nb);
    cuda::int_fake_quant_groups(dx.get(), d_fake.get(), L, f);
    cuda::int_encode_groups(dx.get(), L, f, d_codes.get(), d_params.get());
    cuda::int_decode_groups(d_codes.get(), d_params.get(), L, f, d_decoded.get());

    const auto p = params_to_host(d_params);
    EXPECT_TRUE(test::same_bits(scales_of(p), scales_of(params)));
    EXPECT_TRUE(test::same_bits(zero_points_of(p), zero_points_of(params)));
    EXPECT_TRUE(test::same_items(d_codes.to_host(), codes));
    EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
    EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
    EXPECT_TRUE(test::decoded_equals_fake(d_decoded.to_host(), d_fake.to_host(), x));
}

// Channel parameters from device statistics (as the engine computes them) against the CPU's.
void expect_channels_match(const std::vector<float>& x, const ChannelLayout& L, IntFormat f, size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << "bits " << f.bits << (f.asymmetric ? " asym" : " sym") << " layout " << L.outer
                                    << "x" << L.channels << "x" << L.inner);
    const size_t n = x.size(), nc = static_cast<size_t>(L.channels);
    std::vector<float> lo(nc), hi(nc), fake(n), decoded(n);
    std::vector<uint8_t> codes(n);
    if (f.asymmetric) {
        channel_finite_range(x.data(), L, lo.data(), hi.data());
    } else {
        channel_finite_absmax(x.data(), L, hi.data());
        for (size_t c = 0; c < nc; ++c) lo[c] = -hi[c];
    }
    std::vector<IntParams> params(nc);
    for (size_t c = 0; c < nc; ++c) params[c] = int_params_for_range(lo[c], hi[c], f);
    int_fake_quant_channels(x.data(), fake.data(), L, params.data(), f);
    int_encode_channels(x.data(), L, params.data(), f, codes.data());
    int_decode_channels(codes.data(), L, params.data(), f, decoded.data());

    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_lo(nc), d_hi(nc), d_fake(n, offset), d_decoded(n, offset);
    test::DeviceBuffer<uint8_t> d_codes(n, offset);
    test::DeviceBuffer<IntParams> d_params(nc);
    if (f.asymmetric) {
        cuda::channel_finite_range(dx.get(), L, d_lo.get(), d_hi.get());
        cuda::int_params_for_range(d_lo.get(), d_hi.get(), L.channels, f, d_params.get());
    } else {
        cuda::channel_finite_absmax(dx.get(), L, d_hi.get());
        cuda::int_params_for_range(nullptr, d_hi.get(), L.channels, f, d_params.get());
    }
    cuda::int_fake_quant_channels(dx.get(), d_fake.get(), L, d_params.get(), f);
    cuda::int_encode_channels(dx.get(), L, d_params.get(), f, d_codes.get());
    cuda::int_decode_channels(d_codes.get(), L, d_params.get(), f, d_decoded.get());

    const auto p = params_to_host(d_params);
    EXPECT_TRUE(test::same_bits(scales_of(p), scales_of(params)));
    EXPECT_TRUE(test::same_bits(zero_points_of(p), zero_points_of(params)));
    EXPECT_TRUE(test::same_items(d_codes.to_host(), codes));
    EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
    EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
    EXPECT_TRUE(test::decoded_equals_fake(d_decoded.to_host(), d_fake.to_host(), x));
}

TEST(CudaIntegerQuant, GroupsMatchCpuForEveryWidthAndMapping) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(40, 512, 41);
    for (IntFormat f : kFormats)
        for (int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}, int64_t{512}, int64_t{16}})
            expect_groups_match(x, 40, 512, group, f);
}

TEST(CudaIntegerQuant, GroupTailsOddSizesAndUnalignedBuffersMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (IntFormat f : kFormats) {
        expect_groups_match(test::tensor_with_specials(37, 300, 42), 37, 300, 128, f);  // 2 groups + 44
        expect_groups_match(test::mixed_tensor(9, 100, 43), 9, 100, 48, f);
        expect_groups_match(test::tensor_with_specials(16, 512, 44), 16, 512, 128, f, 1);
    }
}

TEST(CudaIntegerQuant, ChannelsMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(24, 30 * 7, 45);  // [24, 30, 7]
    for (IntFormat f : kFormats) {
        expect_channels_match(x, ChannelLayout{1, 1, 24 * 210}, f);  // per tensor
        expect_channels_match(x, ChannelLayout{1, 24, 210}, f);      // axis 0
        expect_channels_match(x, ChannelLayout{24, 30, 7}, f);       // axis 1
        expect_channels_match(x, ChannelLayout{720, 7, 1}, f, 1);    // axis 2, unaligned
    }
}

TEST(CudaIntegerQuant, ZeroGroupsAndChannels) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    std::vector<float> x(4 * 128, 0.0f);
    x[130] = std::numeric_limits<float>::infinity();  // a zero group with an Inf
    x[300] = std::nanf("");
    for (IntFormat f : kFormats) {
        expect_groups_match(x, 4, 128, 128, f);
        expect_channels_match(x, ChannelLayout{1, 4, 128}, f);
    }
}

TEST(CudaIntegerQuant, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(1024, 4096, 46);
    expect_groups_match(x, 1024, 4096, 128, IntFormat{4, false});
    expect_groups_match(x, 1024, 4096, 128, IntFormat{4, true});
    expect_groups_match(x, 1024, 4096, 64, IntFormat{8, true});
    expect_channels_match(x, ChannelLayout{1, 1024, 4096}, IntFormat{8, false});
    expect_channels_match(x, ChannelLayout{1024, 4096, 1}, IntFormat{8, true});
}

}  // namespace
}  // namespace ql::kernels
