// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 on the device: the arithmetic of kernels/nvfp4.cpp, operation for operation.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/minifloat.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

// nvfp4.cpp block_denominator: float(s8) * g and the E4M3 byte s8.
QL_HD float block_denominator(float block_amax, float g, float six_g, uint8_t* s8_out) {
    float s = block_amax == 0.0f ? 1.0f : block_amax / six_g;
    if (s == 0.0f) s = 1.0f;
    const uint8_t s8 = static_cast<uint8_t>(encode_element<E4M3>(s));
    *s8_out = s8;
    return decode_element<E4M3>(s8) * g;
}

// nvfp4.cpp fake_quant_block / fake_quant_blocks for one element of a block with denominator d.
QL_HD float fake_element(float v, float d) {
    if (d == 0.0f) return is_nan_bits(v) ? v : 0.0f;
    const float q = round_to_grid<E2M1>(abs_bits(v / d)) * d;
    return is_nan_bits(v) ? v : copy_sign_of(q, v);
}

// nvfp4.cpp encode_block for one element.
QL_HD uint8_t code_element(float v, float d) {
    unsigned c;
    if (is_nan_bits(v)) {
        c = E2M1::nan_code;
    } else if (d == 0.0f) {
        c = 0;
    } else {
        c = grid_code<E2M1>(round_to_grid<E2M1>(abs_bits(v / d))) | (v < 0.0f ? 8u : 0u);
    }
    return static_cast<uint8_t>(c);
}

struct FakeOp {
    float* y;
    float g, six_g;
    using Stat = FiniteAbsmax;
    using Block = float;  // the denominator float(s8) * g
    QL_HD float block(const Stat& st, int64_t, int64_t, bool) const {
        uint8_t s8;
        return block_denominator(st.value(), g, six_g, &s8);
    }
    QL_HD void elements4(int64_t i, float4 v, float d) const {
        *reinterpret_cast<float4*>(y + i) =
            make_float4(fake_element(v.x, d), fake_element(v.y, d), fake_element(v.z, d), fake_element(v.w, d));
    }
    QL_HD void element(int64_t i, float v, float d) const { y[i] = fake_element(v, d); }
};

struct EncodeOp {
    uint8_t* codes;
    uint8_t* scales;
    float g, six_g;
    using Stat = FiniteAbsmax;
    using Block = float;
    QL_HD float block(const Stat& st, int64_t b, int64_t, bool leader) const {
        uint8_t s8;
        const float d = block_denominator(st.value(), g, six_g, &s8);
        if (leader) scales[b] = s8;
        return d;
    }
    QL_HD void elements4(int64_t i, float4 v, float d) const {
        *reinterpret_cast<uchar4*>(codes + i) =
            make_uchar4(code_element(v.x, d), code_element(v.y, d), code_element(v.z, d), code_element(v.w, d));
    }
    QL_HD void element(int64_t i, float v, float d) const { codes[i] = code_element(v, d); }
};

// nvfp4.cpp decode_block: E2M1 value times float(s8) * g.
struct DecodeOp {
    const uint8_t* scales;
    float g;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t b) const { return decode_element<E4M3>(scales[b]) * g; }
    QL_HD float apply(uint8_t code, float d) const { return decode_element<E2M1>(code) * d; }
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
