// SPDX-License-Identifier: GPL-3.0-or-later
// The device-memory helpers of cuda_kernels.h.
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

TEST(CudaRuntime, DeviceArrayRoundTripsAndMoves) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const std::vector<float> v = {1.0f, -2.0f, 3.5f};
    cuda::DeviceArray<float> a(v);
    EXPECT_EQ(a.size(), 3);
    cuda::DeviceArray<float> b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_TRUE(test::same_bits(b.to_host(), v));
    cuda::DeviceArray<uint8_t> empty(0);
    EXPECT_TRUE(empty.to_host().empty());
}

TEST(CudaRuntime, CopiesBetweenHostAndDevice) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const std::vector<float> v = {0.5f, -0.0f, std::numeric_limits<float>::infinity()};
    cuda::DeviceArray<float> a(3), b(3);
    cuda::copy_to_device(a.data(), v.data(), sizeof(float) * 3);
    cuda::copy_on_device(b.data(), a.data(), sizeof(float) * 3);
    std::vector<float> back(3);
    cuda::copy_to_host(back.data(), b.data(), sizeof(float) * 3);
    EXPECT_TRUE(test::same_bits(back, v));
}

}  // namespace
}  // namespace ql::kernels
