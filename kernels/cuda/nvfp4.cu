// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 on the device with the CPU kernels' block and element functions (kernels/nvfp4_block.h).
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/nvfp4_block.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

struct FakeOp {
    float* y;
    float g, six_g;
    using Stat = FiniteAbsmax;
    using Block = float;  // the denominator float(s8) * g
    QL_HD float block(const Stat& st, int64_t, int64_t, bool) const {
        return nvfp4_denominator(nvfp4_block_scale(st.value(), six_g), g);
    }
    QL_HD void elements4(int64_t i, float4 v, float d) const {
        *reinterpret_cast<float4*>(y + i) = make_float4(nvfp4_fake_element(v.x, d), nvfp4_fake_element(v.y, d),
                                                        nvfp4_fake_element(v.z, d), nvfp4_fake_element(v.w, d));
    }
    QL_HD void element(int64_t i, float v, float d) const { y[i] = nvfp4_fake_element(v, d); }
};

struct EncodeOp {
    uint8_t* codes;
    uint8_t* scales;
    float g, six_g;
    using Stat = FiniteAbsmax;
    using Block = float;
    QL_HD float block(const Stat& st, int64_t b, int64_t, bool leader) const {
        const float s = nvfp4_block_scale(st.value(), six_g);
        if (leader) scales[b] = nvfp4_scale_code(s);
        return nvfp4_denominator(s, g);
    }
    QL_HD void elements4(int64_t i, float4 v, float d) const {
        *reinterpret_cast<uchar4*>(codes + i) = make_uchar4(nvfp4_code_element(v.x, d), nvfp4_code_element(v.y, d),
                                                            nvfp4_code_element(v.z, d), nvfp4_code_element(v.w, d));
    }
    QL_HD void element(int64_t i, float v, float d) const { codes[i] = nvfp4_code_element(v, d); }
};

struct DecodeOp {
    const uint8_t* scales;
    float g;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t b) const { return nvfp4_denominator_of_code(scales[b], g); }
    QL_HD float apply(uint8_t code, float d) const { return nvfp4_decode_element(code, d); }
};

void require_block_16(const RowBlocks& L) {
    if (L.block != kNvfp4Block) invalid("NVFP4 blocks are 16 elements, got L.block = " + std::to_string(L.block));
}

}  // namespace

void nvfp4_fake_quant(const float* x, float* y, const RowBlocks& L, float global_scale, void* stream) {
    require_block_16(L);
    const FakeOp op{y, global_scale, 6.0f * global_scale};
    run_blocks<16, 16>("nvfp4_fake_quant", op, x, L, aligned(y, 16), stream);
}

void nvfp4_encode(const float* x, const RowBlocks& L, float global_scale, uint8_t* codes, uint8_t* block_scales,
                  void* stream) {
    require_block_16(L);
    const EncodeOp op{codes, block_scales, global_scale, 6.0f * global_scale};
    run_blocks<16, 16>("nvfp4_encode", op, x, L, aligned(codes, 4), stream);
}

void nvfp4_decode(const uint8_t* codes, const uint8_t* block_scales, const RowBlocks& L, float global_scale,
                  float* y, void* stream) {
    require_block_16(L);
    run_block_map<16>("nvfp4_decode", DecodeOp{block_scales, global_scale}, L, codes, y, stream);
}

}  // namespace ql::kernels::cuda
