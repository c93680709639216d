// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA GGUF block formats against the CPU kernels, byte for byte and bit for bit.
#include "kernels/gguf_blocks.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

const GgufType kTypes[] = {GgufType::Q8_0, GgufType::Q4_0, GgufType::Q4_1, GgufType::Q5_0, GgufType::MXFP4};

// Quantize / dequantize (cols % 32 == 0) and fake quantization (any cols) on both sides.
void expect_gpu_matches_cpu(const std::vector<float>& x, int64_t rows, int64_t cols, size_t offset = 0) {
    const RowBlocks L{rows, cols, kGgufBlock};
    for (GgufType t : kTypes) {
        SCOPED_TRACE(testing::Message() << "type " << static_cast<int>(t) << " shape " << rows << "x" << cols
                                        << " offset " << offset);
        std::vector<float> fake(x.size());
        gguf_fake_quant(x.data(), fake.data(), L, t);
        const test::DeviceBuffer<float> dx(x, offset);
        test::DeviceBuffer<float> d_fake(x.size(), offset);
        cuda::gguf_fake_quant(dx.get(), d_fake.get(), L, t);
        EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
        if (cols % kGgufBlock != 0) continue;

        const size_t bytes = static_cast<size_t>(rows * (cols / kGgufBlock) * gguf_type_size(t));
        std::vector<uint8_t> blocks(bytes);
        std::vector<float> decoded(x.size());
        gguf_quantize(x.data(), rows, cols, t, blocks.data());
        gguf_dequantize(blocks.data(), rows, cols, t, decoded.data());
        test::DeviceBuffer<uint8_t> d_blocks(bytes, offset);
        test::DeviceBuffer<float> d_decoded(x.size(), offset);
        cuda::gguf_quantize(dx.get(), rows, cols, t, d_blocks.get());
        cuda::gguf_dequantize(d_blocks.get(), rows, cols, t, d_decoded.get());
        EXPECT_TRUE(test::same_items(d_blocks.to_host(), blocks));
        EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
        EXPECT_TRUE(test::decoded_equals_fake(d_decoded.to_host(), d_fake.to_host(), x));
    }
}

TEST(CudaGguf, EveryTypeMatchesCpuOnMixedData) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::mixed_tensor(64, 512, 61), 64, 512);
}

TEST(CudaGguf, NanInfSubnormalAndZeroBlocksMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    // Includes a zero block holding +-Inf (scale 0: ggml's arithmetic makes NaN codes there).
    expect_gpu_matches_cpu(test::tensor_with_specials(64, 512, 62), 64, 512);
    std::vector<float> tiny(64, 1e-39f);
    tiny[3] = -2e-39f;
    tiny[40] = 1e-44f;
    expect_gpu_matches_cpu(tiny, 2, 32);
    expect_gpu_matches_cpu(std::vector<float>(64, 0.0f), 2, 32);
}

TEST(CudaGguf, TailsAndUnalignedBuffersMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(21, 77, 63), 21, 77);  // fake quantization only
    expect_gpu_matches_cpu(test::tensor_with_specials(16, 96, 64), 16, 96, 1);
}

TEST(CudaGguf, LargeTensorMatchesCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(1024, 4096, 65), 1024, 4096);
}

TEST(CudaGguf, InPlaceKeepsNanLikeOutOfPlace) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(16, 96, 66);
    const RowBlocks L{16, 96, kGgufBlock};
    for (GgufType t : kTypes) {
        std::vector<float> fake(x.size());
        gguf_fake_quant(x.data(), fake.data(), L, t);  // out of place
        const test::DeviceBuffer<float> buf(x);
        cuda::gguf_fake_quant(buf.get(), buf.get(), L, t);
        EXPECT_TRUE(test::same_values(buf.to_host(), fake)) << static_cast<int>(t);
    }
}

// The K-quants and IQ4 (one thread per super-block) and the importance paths, against the CPU.
// Inputs keep ggml's searches finite (no FLT_MAX: there the searches overflow float32, where
// only x86's NaN rules define ggml's result), with NaN / Inf elements that the search sees as 0.
void expect_kquants_match_cpu(const std::vector<float>& x, int64_t rows, int64_t cols, const std::vector<float>& importance) {
    const GgufType types[] = {GgufType::Q2_K, GgufType::Q3_K, GgufType::Q4_K, GgufType::Q5_K, GgufType::Q6_K,
                              GgufType::IQ4_NL, GgufType::IQ4_XS, GgufType::Q4_0, GgufType::Q4_1, GgufType::Q5_0};
    const test::DeviceBuffer<float> dx(x), dimp(importance);
    for (GgufType t : types)
        for (bool weighted : {false, true}) {
            if (!weighted && t <= GgufType::Q5_0) continue;  // the 32-element types' plain paths: above
            SCOPED_TRACE(testing::Message() << "type " << static_cast<int>(t) << (weighted ? " importance" : "") << " shape "
                                            << rows << "x" << cols);
            const float* w = weighted ? importance.data() : nullptr;
            const float* dw = weighted ? dimp.get() : nullptr;
            const RowBlocks L{rows, cols, gguf_block_elements(t)};
            std::vector<float> fake(x.size());
            gguf_fake_quant(x.data(), fake.data(), L, t, w);
            test::DeviceBuffer<float> d_fake(x.size());
            cuda::gguf_fake_quant(dx.get(), d_fake.get(), L, t, dw, nullptr);
            EXPECT_TRUE(test::same_values(d_fake.to_host(), fake));
            if (cols % gguf_block_elements(t) != 0) continue;
            const size_t bytes = static_cast<size_t>(rows * (cols / gguf_block_elements(t)) * gguf_type_size(t));
            std::vector<uint8_t> blocks(bytes);
            std::vector<float> decoded(x.size());
            gguf_quantize(x.data(), rows, cols, t, blocks.data(), w);
            gguf_dequantize(blocks.data(), rows, cols, t, decoded.data());
            test::DeviceBuffer<uint8_t> d_blocks(bytes);
            test::DeviceBuffer<float> d_decoded(x.size());
            cuda::gguf_quantize(dx.get(), rows, cols, t, d_blocks.get(), dw, nullptr);
            cuda::gguf_dequantize(d_blocks.get(), rows, cols, t, d_decoded.get());
            EXPECT_TRUE(test::same_items(d_blocks.to_host(), blocks));
            EXPECT_TRUE(test::same_values(d_decoded.to_host(), decoded));
        }
}

std::vector<float> kquant_input(int64_t rows, int64_t cols, uint32_t seed) {
    std::vector<float> x = test::mixed_tensor(rows, cols, seed);  // includes rows of subnormals and outliers
    for (size_t i = 7; i < x.size(); i += 997) x[i] = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 300; i < x.size(); i += 1499) x[i] = (i & 1) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    return x;
}

std::vector<float> importance_of(int64_t cols) {
    std::vector<float> w(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) w[static_cast<size_t>(c)] = c % 37 == 0 ? 0.0f : 0.25f + static_cast<float>((c * 7919) % 101) / 13.0f;
    return w;
}

TEST(CudaGguf, KQuantsAndImportancePathsMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_kquants_match_cpu(kquant_input(64, 1024, 67), 64, 1024, importance_of(1024));
    expect_kquants_match_cpu(kquant_input(9, 300, 68), 9, 300, importance_of(300));  // fake quantization of short tails
    expect_kquants_match_cpu(std::vector<float>(2 * 256, 0.0f), 2, 256, importance_of(256));
}

TEST(CudaGguf, RejectsRowsThatAreNotWholeBlocks) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const test::DeviceBuffer<float> x(40);
    test::DeviceBuffer<uint8_t> b(64);
    EXPECT_THROW(cuda::gguf_quantize(x.get(), 1, 40, GgufType::Q8_0, b.get()), std::invalid_argument);
}

}  // namespace
}  // namespace ql::kernels
