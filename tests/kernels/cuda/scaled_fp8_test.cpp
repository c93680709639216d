// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA FP8 with per-tensor / per-channel scales against the CPU kernels, bit for bit, with the
// scales computed on the device as the engine would (channel_finite_absmax, fp8_scales_for_amax).
#include "kernels/channel_reduce.h"
#include "kernels/scaled_fp8.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

void expect_gpu_matches_cpu(const std::vector<float>& x, const ChannelLayout& L, Fp8Kind k, size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << "layout " << L.outer << "x" << L.channels << "x" << L.inner << " kind "
                                    << static_cast<int>(k) << " offset " << offset);
    const size_t n = x.size();
    const size_t nc = static_cast<size_t>(L.channels);
    // CPU
    std::vector<float> amax(nc), scales(nc), fake(n), decoded(n);
    std::vector<uint8_t> codes(n);
    channel_finite_absmax(x.data(), L, amax.data());
    for (size_t c = 0; c < nc; ++c) scales[c] = fp8_scale_for_amax(amax[c], k);
    fp8_fake_quant(x.data(), fake.data(), L, scales.data(), k);
    fp8_encode(x.data(), L, scales.data(), k, codes.data());
    fp8_decode(codes.data(), L, scales.data(), k, decoded.data());
    // GPU
    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_amax(nc), d_scales(nc), d_fake(n, offset), d_decoded(n, offset);
    test::DeviceBuffer<uint8_t> d_codes(n, offset);
    cuda::channel_finite_absmax(dx.get(), L, d_amax.get());
    cuda::fp8_scales_for_amax(d_amax.get(), L.channels, k, d_scales.get());
    cuda::fp8_fake_quant(dx.get(), d_fake.get(), L, d_scales.get(), k);
    cuda::fp8_encode(dx.get(), L, d_scales.get(), k, d_codes.get());
    cuda::fp8_decode(d_codes.get(), L, d_scales.get(), k, d_decoded.get());

    EXPECT_TRUE(test::same_bits(d_amax.to_host(), amax));
    EXPECT_TRUE(test::same_bits(d_scales.to_host(), scales));
    EXPECT_TRUE(test::same_items(d_codes.to_host(), codes));
    EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
    EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
    EXPECT_TRUE(test::decoded_equals_fake(d_decoded.to_host(), d_fake.to_host(), x));
}

TEST(CudaScaledFp8, PerTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (Fp8Kind k : {Fp8Kind::E4M3, Fp8Kind::E5M2}) {
        expect_gpu_matches_cpu(test::mixed_tensor(64, 256, 21), ChannelLayout{1, 1, 64 * 256}, k);
        expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 22), ChannelLayout{1, 1, 64 * 256}, k);
        expect_gpu_matches_cpu(test::tensor_with_specials(13, 37, 23), ChannelLayout{1, 1, 13 * 37}, k, 1);
    }
}

TEST(CudaScaledFp8, PerChannelMatchesCpuForEveryAxis) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(24, 30 * 7, 24);  // viewed as [24, 30, 7]
    for (Fp8Kind k : {Fp8Kind::E4M3, Fp8Kind::E5M2}) {
        expect_gpu_matches_cpu(x, ChannelLayout{1, 24, 210}, k);   // axis 0
        expect_gpu_matches_cpu(x, ChannelLayout{24, 30, 7}, k);    // axis 1
        expect_gpu_matches_cpu(x, ChannelLayout{720, 7, 1}, k);    // axis 2
        expect_gpu_matches_cpu(x, ChannelLayout{24, 30, 7}, k, 3);  // unaligned
    }
}

TEST(CudaScaledFp8, ZeroAmaxGivesScaleOne) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    std::vector<float> x(64, 0.0f);
    for (int i = 32; i < 64; ++i) x[i] = static_cast<float>(i);
    expect_gpu_matches_cpu(x, ChannelLayout{1, 2, 32}, Fp8Kind::E4M3);
}

TEST(CudaScaledFp8, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(1024, 4096, 25);
    expect_gpu_matches_cpu(x, ChannelLayout{1, 1, 1024 * 4096}, Fp8Kind::E4M3);
    expect_gpu_matches_cpu(x, ChannelLayout{1, 1024, 4096}, Fp8Kind::E4M3);
    expect_gpu_matches_cpu(x, ChannelLayout{1024, 4096, 1}, Fp8Kind::E5M2);
}

}  // namespace
}  // namespace ql::kernels
