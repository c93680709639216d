// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA NVFP4 against the CPU kernels, bit for bit.
#include "kernels/channel_reduce.h"
#include "kernels/nvfp4.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

struct Nvfp4Result {
    std::vector<float> fake, decoded;
    std::vector<uint8_t> codes, scales;
};

Nvfp4Result on_cpu(const std::vector<float>& x, const RowBlocks& L, float g) {
    Nvfp4Result r;
    r.fake.resize(x.size());
    r.decoded.resize(x.size());
    r.codes.resize(x.size());
    r.scales.resize(static_cast<size_t>(L.block_count()));
    nvfp4_fake_quant(x.data(), r.fake.data(), L, g);
    nvfp4_encode(x.data(), L, g, r.codes.data(), r.scales.data());
    nvfp4_decode(r.codes.data(), r.scales.data(), L, g, r.decoded.data());
    return r;
}

// `offset` shifts every device buffer by that many elements (offset 1: nothing is aligned).
Nvfp4Result on_gpu(const std::vector<float>& x, const RowBlocks& L, float g, size_t offset = 0) {
    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> fake(x.size(), offset), decoded(x.size(), offset);
    test::DeviceBuffer<uint8_t> codes(x.size(), offset), scales(static_cast<size_t>(L.block_count()), offset);
    cuda::nvfp4_fake_quant(dx.get(), fake.get(), L, g);
    cuda::nvfp4_encode(dx.get(), L, g, codes.get(), scales.get());
    cuda::nvfp4_decode(codes.get(), scales.get(), L, g, decoded.get());
    return {fake.to_host(), decoded.to_host(), codes.to_host(), scales.to_host()};
}

void expect_gpu_matches_cpu(const std::vector<float>& x, int64_t rows, int64_t cols, size_t offset = 0) {
    const RowBlocks L{rows, cols, kNvfp4Block};
    const float g = nvfp4_global_scale(finite_absmax(x.data(), static_cast<int64_t>(x.size())));
    const Nvfp4Result c = on_cpu(x, L, g), d = on_gpu(x, L, g, offset);
    EXPECT_TRUE(test::same_items(d.codes, c.codes));
    EXPECT_TRUE(test::same_items(d.scales, c.scales));
    EXPECT_TRUE(test::same_values(d.fake, c.fake));
    EXPECT_TRUE(test::same_values(d.decoded, c.decoded));
    EXPECT_TRUE(test::decoded_equals_fake(d.decoded, d.fake, x));
}

TEST(CudaNvfp4, MatchesCpuOnMixedData) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::mixed_tensor(64, 256, 1), 64, 256);
}

TEST(CudaNvfp4, MatchesCpuWithNanInfAndZeros) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 2), 64, 256);
    expect_gpu_matches_cpu(std::vector<float>(48, 0.0f), 3, 16);  // g = 0: every block decodes to 0
}

TEST(CudaNvfp4, TailBlocksMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(21, 37, 3), 21, 37);  // 2 blocks + 5
    expect_gpu_matches_cpu(test::mixed_tensor(9, 5, 4), 9, 5);              // one short block per row
    expect_gpu_matches_cpu(test::mixed_tensor(1, 100003, 5), 1, 100003);
}

TEST(CudaNvfp4, UnalignedBuffersMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 6), 64, 256, 1);
}

TEST(CudaNvfp4, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(1024, 4096, 7), 1024, 4096);
    expect_gpu_matches_cpu(test::mixed_tensor(1000, 4100, 8), 1000, 4100);
}

TEST(CudaNvfp4, InPlaceEqualsOutOfPlace) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (int64_t cols : {int64_t{256}, int64_t{37}}) {
        const auto x = test::tensor_with_specials(33, cols, 9);
        const RowBlocks L{33, cols, kNvfp4Block};
        const float g = nvfp4_global_scale(finite_absmax(x.data(), static_cast<int64_t>(x.size())));
        const test::DeviceBuffer<float> buf(x);
        cuda::nvfp4_fake_quant(buf.get(), buf.get(), L, g);
        EXPECT_TRUE(test::same_values(buf.to_host(), on_cpu(x, L, g).fake)) << cols;
    }
}

TEST(CudaNvfp4, RejectsOtherBlockSizes) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const test::DeviceBuffer<float> x(64);
    EXPECT_THROW(cuda::nvfp4_fake_quant(x.get(), x.get(), RowBlocks{2, 32, 32}, 1.0f), std::invalid_argument);
}

}  // namespace
}  // namespace ql::kernels
