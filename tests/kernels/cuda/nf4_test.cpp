// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA NF4 against the CPU kernels, bit for bit, including the short last block and double
// quantization (host-side, through the device API).
#include "kernels/nf4.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

void expect_gpu_matches_cpu(const std::vector<float>& x, int64_t block, size_t offset = 0) {
    const int64_t n = static_cast<int64_t>(x.size());
    SCOPED_TRACE(testing::Message() << "n " << n << " block " << block << " offset " << offset);
    const size_t nb = static_cast<size_t>((n + block - 1) / block);
    std::vector<float> fake(x.size()), decoded(x.size()), absmax(nb);
    std::vector<uint8_t> codes(x.size());
    nf4_fake_quant(x.data(), fake.data(), n, block);
    nf4_encode(x.data(), n, block, codes.data(), absmax.data());
    nf4_decode(codes.data(), absmax.data(), n, block, decoded.data());

    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> d_fake(x.size(), offset), d_decoded(x.size(), offset), d_absmax(nb);
    test::DeviceBuffer<uint8_t> d_codes(x.size(), offset);
    cuda::nf4_fake_quant(dx.get(), d_fake.get(), n, block);
    cuda::nf4_encode(dx.get(), n, block, d_codes.get(), d_absmax.get());
    cuda::nf4_decode(d_codes.get(), d_absmax.get(), n, block, d_decoded.get());

    EXPECT_TRUE(test::same_items(d_codes.to_host(), codes));
    EXPECT_TRUE(test::same_bits(d_absmax.to_host(), absmax));
    EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
    EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
    EXPECT_TRUE(test::decoded_equals_fake(d_decoded.to_host(), d_fake.to_host(), x));
}

TEST(CudaNf4, MatchesCpuWithAndWithoutTail) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::mixed_tensor(1, 64 * 300, 51), kNf4Block);
    expect_gpu_matches_cpu(test::tensor_with_specials(1, 64 * 50 + 17, 52), kNf4Block);
    expect_gpu_matches_cpu(test::mixed_tensor(1, 5, 53), kNf4Block);  // only a short block
}

TEST(CudaNf4, OtherBlockSizesAndUnalignedBuffersMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(1, 128 * 40 + 3, 54);
    for (int64_t block : {int64_t{32}, int64_t{128}, int64_t{256}, int64_t{37}, int64_t{4096}})
        expect_gpu_matches_cpu(x, block);
    expect_gpu_matches_cpu(x, kNf4Block, 1);
}

TEST(CudaNf4, ZerosNanAndInf) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    std::vector<float> x(64 * 3 + 10, 0.0f);
    x[70] = std::nanf("");
    x[71] = std::numeric_limits<float>::infinity();
    x[140] = -std::numeric_limits<float>::infinity();
    x[200] = 1e-39f;  // the tail block: absmax below the 1e-38 clamp
    expect_gpu_matches_cpu(x, kNf4Block);
}

TEST(CudaNf4, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(1024, 4096, 55), kNf4Block);
    expect_gpu_matches_cpu(test::mixed_tensor(1, 1024 * 4096 + 33, 56), kNf4Block);
}

TEST(CudaNf4, DoubleQuantizationMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    for (int64_t n : {int64_t{64 * 1000}, int64_t{64 * 300 + 5}, int64_t{1024 * 4096}}) {
        SCOPED_TRACE(n);
        const auto x = test::tensor_with_specials(1, n, 57);
        const int64_t nb = (n + kNf4Block - 1) / kNf4Block;
        const int64_t nb2 = (nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock;
        // CPU
        std::vector<float> fake(x.size()), absmax(static_cast<size_t>(nb)), absmax2(static_cast<size_t>(nb2)),
            absmax_dq(static_cast<size_t>(nb));
        std::vector<uint8_t> codes(x.size()), codes8(static_cast<size_t>(nb));
        float offset = 0.0f;
        nf4_fake_quant_double(x.data(), fake.data(), n, kNf4Block);
        nf4_encode(x.data(), n, kNf4Block, codes.data(), absmax.data());
        nf4_double_quant(absmax.data(), nb, codes8.data(), absmax2.data(), &offset);
        nf4_double_dequant(codes8.data(), absmax2.data(), offset, nb, absmax_dq.data());
        // GPU
        const test::DeviceBuffer<float> dx(x);
        test::DeviceBuffer<float> d_fake(x.size()), d_absmax(static_cast<size_t>(nb)),
            d_absmax2(static_cast<size_t>(nb2)), d_absmax_dq(static_cast<size_t>(nb));
        test::DeviceBuffer<uint8_t> d_codes(x.size()), d_codes8(static_cast<size_t>(nb));
        float d_offset = -1.0f;
        cuda::nf4_fake_quant_double(dx.get(), d_fake.get(), n, kNf4Block);
        cuda::nf4_encode(dx.get(), n, kNf4Block, d_codes.get(), d_absmax.get());
        cuda::nf4_double_quant(d_absmax.get(), nb, d_codes8.get(), d_absmax2.get(), &d_offset);
        cuda::nf4_double_dequant(d_codes8.get(), d_absmax2.get(), d_offset, nb, d_absmax_dq.get());

        EXPECT_EQ(test::bits_of(d_offset), test::bits_of(offset));
        EXPECT_TRUE(test::same_items(d_codes8.to_host(), codes8));
        EXPECT_TRUE(test::same_bits(d_absmax2.to_host(), absmax2));
        EXPECT_TRUE(test::same_bits(d_absmax_dq.to_host(), absmax_dq));
        EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));

        // In place, the device version keeps NaN inputs too (they are read before the writes).
        const test::DeviceBuffer<float> buf(x);
        cuda::nf4_fake_quant_double(buf.get(), buf.get(), n, kNf4Block);
        EXPECT_TRUE(test::same_values(buf.to_host(), fake));
    }
}

}  // namespace
}  // namespace ql::kernels
