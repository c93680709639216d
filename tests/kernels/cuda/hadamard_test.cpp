// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA Walsh–Hadamard transform against the CPU kernel, bit for bit: shared-memory tiles,
// the global-memory path for blocks longer than a tile, signs, in place and misaligned pointers.
#include "kernels/hadamard.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

std::vector<float> signs_for(int64_t n) {
    std::vector<float> s(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = ((i * 2654435761u) >> 7) & 1 ? 1.0f : -1.0f;
    return s;
}

void expect_gpu_matches_cpu(int64_t rows, int64_t cols, int64_t block, bool with_signs, size_t offset = 0) {
    SCOPED_TRACE(testing::Message() << rows << "x" << cols << " block " << block << (with_signs ? " signs" : ""));
    const auto x = test::mixed_tensor(rows, cols, static_cast<uint32_t>(cols * 3 + block));
    const auto s = signs_for(cols);
    std::vector<float> want(x.size());
    hadamard_rows(x.data(), want.data(), HadamardLayout{rows, cols, block}, with_signs ? s.data() : nullptr);
    const test::DeviceBuffer<float> dx(x, offset), ds(s);
    test::DeviceBuffer<float> dy(x.size(), offset);
    cuda::hadamard_rows(dx.get(), dy.get(), HadamardLayout{rows, cols, block}, with_signs ? ds.get() : nullptr);
    EXPECT_TRUE(test::same_bits(dy.to_host(), want));
    // In place.
    test::DeviceBuffer<float> dz(x, offset);
    cuda::hadamard_rows(dz.get(), dz.get(), HadamardLayout{rows, cols, block}, with_signs ? ds.get() : nullptr);
    EXPECT_TRUE(test::same_bits(dz.to_host(), want));
}

TEST(CudaHadamard, MatchesCpuBitForBit) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (bool signs : {false, true}) {
        expect_gpu_matches_cpu(33, 16, 16, signs);
        expect_gpu_matches_cpu(17, 192, 64, signs);
        expect_gpu_matches_cpu(9, 512, 512, signs);
        expect_gpu_matches_cpu(5, 1536, 512, signs, 1);
        expect_gpu_matches_cpu(3, 4096, 4096, signs);
        expect_gpu_matches_cpu(2, 8192, 8192, signs);      // global-memory stages
        expect_gpu_matches_cpu(2, 3 * 8192, 8192, signs, 1);
        expect_gpu_matches_cpu(1000, 96, 32, signs);
        expect_gpu_matches_cpu(7, 5, 1, signs);
    }
}

TEST(CudaHadamard, RefusesBadLayouts) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    test::DeviceBuffer<float> d(96);
    EXPECT_THROW(cuda::hadamard_rows(d.get(), d.get(), HadamardLayout{1, 96, 48}), std::invalid_argument);
    EXPECT_THROW(cuda::hadamard_rows(d.get(), d.get(), HadamardLayout{1, 96, 64}), std::invalid_argument);
}

}  // namespace
}  // namespace ql::kernels
