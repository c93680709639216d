// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA BF16 / FP16 round trips against the CPU kernels, bit for bit.
#include "kernels/half_rounding.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

void expect_gpu_matches_cpu(const std::vector<float>& x, HalfKind k, size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << "kind " << static_cast<int>(k) << " n " << x.size() << " offset " << offset);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size()), decoded(x.size());
    std::vector<uint16_t> codes(x.size());
    half_round_trip(x.data(), y.data(), n, k);
    half_encode(x.data(), n, k, codes.data());
    half_decode(codes.data(), n, k, decoded.data());
    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_y(x.size(), offset), d_decoded(x.size(), offset);
    test::DeviceBuffer<uint16_t> d_codes(x.size(), offset);
    cuda::half_round_trip(dx.get(), d_y.get(), n, k);
    cuda::half_encode(dx.get(), n, k, d_codes.get());
    cuda::half_decode(d_codes.get(), n, k, d_decoded.get());
    EXPECT_TRUE(test::same_items(d_codes.to_host(), codes));
    EXPECT_TRUE(test::same_values(d_y.to_host(), y));
    EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
}

TEST(CudaHalfRounding, Bf16AndFp16MatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (HalfKind k : {HalfKind::BF16, HalfKind::FP16}) {
        expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 71), k);
        expect_gpu_matches_cpu(test::tensor_with_specials(13, 37, 72), k, 1);  // unaligned, n % 4 != 0
        expect_gpu_matches_cpu(test::mixed_tensor(1024, 4096, 73), k);
    }
}

TEST(CudaHalfRounding, Fp16OnAStrideOfAllFloats) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    std::vector<float> x;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 997) x.push_back(test::float_of(static_cast<uint32_t>(b)));
    expect_gpu_matches_cpu(x, HalfKind::FP16);
    expect_gpu_matches_cpu(x, HalfKind::BF16);
}

}  // namespace
}  // namespace ql::kernels
