// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA OCP Microscaling against the CPU kernels, bit for bit, for every element type and both
// scale rules.
#include "kernels/mx.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace ql::kernels {
namespace {

const MxElement kElements[] = {MxElement::E4M3, MxElement::E5M2, MxElement::E3M2,
                               MxElement::E2M3, MxElement::E2M1, MxElement::Int8};
const MxScaleRule kRules[] = {MxScaleRule::Floor, MxScaleRule::RoundUp};

struct MxResult {
    std::vector<float> fake, decoded;
    std::vector<uint8_t> codes, scales;
};

MxResult on_cpu(const std::vector<float>& x, const RowBlocks& L, MxElement e, MxScaleRule rule) {
    MxResult r;
    r.fake.resize(x.size());
    r.decoded.resize(x.size());
    r.codes.resize(x.size());
    r.scales.resize(static_cast<size_t>(L.block_count()));
    mx_fake_quant(x.data(), r.fake.data(), L, e, rule);
    mx_encode(x.data(), L, e, rule, r.codes.data(), r.scales.data());
    mx_decode(r.codes.data(), r.scales.data(), L, e, r.decoded.data());
    return r;
}

MxResult on_gpu(const std::vector<float>& x, const RowBlocks& L, MxElement e, MxScaleRule rule, size_t offset) {
    const test::DeviceBuffer<float> dx(x, offset);
    test::DeviceBuffer<float> fake(x.size(), offset), decoded(x.size(), offset);
    test::DeviceBuffer<uint8_t> codes(x.size(), offset), scales(static_cast<size_t>(L.block_count()), offset);
    cuda::mx_fake_quant(dx.get(), fake.get(), L, e, rule);
    cuda::mx_encode(dx.get(), L, e, rule, codes.get(), scales.get());
    cuda::mx_decode(codes.get(), scales.get(), L, e, decoded.get());
    return {fake.to_host(), decoded.to_host(), codes.to_host(), scales.to_host()};
}

void expect_gpu_matches_cpu(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t block = kMxBlock,
                            size_t offset = 0) {
    const RowBlocks L{rows, cols, block};
    for (MxElement e : kElements)
        for (MxScaleRule rule : kRules) {
            SCOPED_TRACE(testing::Message() << "element " << static_cast<int>(e) << " rule " << static_cast<int>(rule)
                                            << " shape " << rows << "x" << cols << " block " << block);
            const MxResult c = on_cpu(x, L, e, rule), d = on_gpu(x, L, e, rule, offset);
            EXPECT_TRUE(test::same_items(d.codes, c.codes));
            EXPECT_TRUE(test::same_items(d.scales, c.scales));
            EXPECT_TRUE(test::same_values(d.fake, c.fake));
            EXPECT_TRUE(test::same_values(d.decoded, c.decoded));
            EXPECT_TRUE(test::decoded_equals_fake(d.decoded, d.fake, x));
        }
}

TEST(CudaMx, EveryElementAndRuleMatchesCpuOnMixedData) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::mixed_tensor(64, 256, 11), 64, 256);
}

TEST(CudaMx, NanOrInfBlocksMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    // About one element in 50 is special, so roughly half the blocks are NaN blocks.
    expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 12), 64, 256);
    expect_gpu_matches_cpu(std::vector<float>(96, 0.0f), 3, 32);
}

TEST(CudaMx, TailsOtherBlockSizesAndUnalignedBuffersMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(21, 77, 13), 21, 77);  // 2 blocks + 13
    expect_gpu_matches_cpu(test::mixed_tensor(7, 20, 14), 7, 20);             // one short block per row
    expect_gpu_matches_cpu(test::mixed_tensor(16, 256, 15), 16, 256, 16);
    expect_gpu_matches_cpu(test::mixed_tensor(16, 200, 16), 16, 200, 64);
    expect_gpu_matches_cpu(test::tensor_with_specials(64, 256, 17), 64, 256, kMxBlock, 1);
}

TEST(CudaMx, LargeTensorsMatchCpu) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    expect_gpu_matches_cpu(test::tensor_with_specials(1024, 4096, 18), 1024, 4096);
}

TEST(CudaMx, InPlaceEqualsOutOfPlace) {
    if (!ql::kernels::cuda::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    const auto x = test::tensor_with_specials(40, 96, 19);
    const RowBlocks L{40, 96, kMxBlock};
    const test::DeviceBuffer<float> buf(x);
    cuda::mx_fake_quant(buf.get(), buf.get(), L, MxElement::E2M1, MxScaleRule::Floor);
    EXPECT_TRUE(test::same_values(buf.to_host(), on_cpu(x, L, MxElement::E2M1, MxScaleRule::Floor).fake));
}

}  // namespace
}  // namespace ql::kernels
