// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA range statistics against the CPU kernels, bit for bit (the sign of a zero minimum
// included).
#include "kernels/channel_reduce.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

void expect_gpu_matches_cpu(const std::vector<float>& x, const ChannelLayout& L, size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << "layout " << L.outer << "x" << L.channels << "x" << L.inner);
    const size_t nc = static_cast<size_t>(L.channels);
    std::vector<float> amax(nc), lo(nc), hi(nc);
    channel_finite_absmax(x.data(), L, amax.data());
    channel_finite_range(x.data(), L, lo.data(), hi.data());
    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_amax(nc), d_lo(nc), d_hi(nc);
    cuda::channel_finite_absmax(dx.get(), L, d_amax.get());
    cuda::channel_finite_range(dx.get(), L, d_lo.get(), d_hi.get());
    EXPECT_TRUE(test::same_bits(d_amax.to_host(), amax));
    EXPECT_TRUE(test::same_bits(d_lo.to_host(), lo));
    EXPECT_TRUE(test::same_bits(d_hi.to_host(), hi));
}

TEST(CudaChannelReduce, FiniteAbsmaxSkipsNanAndInf) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (size_t offset : {size_t{0}, size_t{1}}) {
        const auto x = test::tensor_with_specials(1025, 4099, 31);
        const test::DeviceBuffer<float> dx(x, offset);
        const float want = finite_absmax(x.data(), static_cast<int64_t>(x.size()));
        EXPECT_EQ(test::bits_of(cuda::finite_absmax(dx.get(), static_cast<int64_t>(x.size()))), test::bits_of(want));
    }
    const std::vector<float> only_nan = {std::nanf(""), -std::numeric_limits<float>::infinity()};
    const test::DeviceBuffer<float> d(only_nan);
    EXPECT_EQ(cuda::finite_absmax(d.get(), 2), 0.0f);
    EXPECT_EQ(cuda::finite_absmax(d.get(), 0), 0.0f);
}

TEST(CudaChannelReduce, ChannelStatisticsMatchCpuForEveryAxis) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(24, 300 * 7, 32);  // [24, 300, 7]
    expect_gpu_matches_cpu(x, ChannelLayout{1, 1, 24 * 2100});
    expect_gpu_matches_cpu(x, ChannelLayout{1, 24, 2100});
    expect_gpu_matches_cpu(x, ChannelLayout{24, 300, 7});
    expect_gpu_matches_cpu(x, ChannelLayout{7200, 7, 1});
    expect_gpu_matches_cpu(x, ChannelLayout{24, 300, 7}, 1);
    expect_gpu_matches_cpu(x, ChannelLayout{3, 8, 2100}, 1);
}

TEST(CudaChannelReduce, NegativeZeroAndAllPositiveChannels) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    // Channel 0 holds only -0.0 and positives (its minimum is -0.0 on the CPU), channel 1 only
    // negatives, channel 2 only NaN.
    std::vector<float> x = {-0.0f, 1.0f, 2.0f, -1.0f, -3.0f, -2.0f, std::nanf(""), std::nanf(""), std::nanf("")};
    expect_gpu_matches_cpu(x, ChannelLayout{1, 3, 3});
    expect_gpu_matches_cpu(x, ChannelLayout{3, 3, 1});
}

TEST(CudaChannelReduce, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(1024, 4096, 33);
    expect_gpu_matches_cpu(x, ChannelLayout{1, 1024, 4096});
    expect_gpu_matches_cpu(x, ChannelLayout{1024, 4096, 1});
    expect_gpu_matches_cpu(x, ChannelLayout{1, 1, 1024 * 4096});
}

}  // namespace
}  // namespace ql::kernels
