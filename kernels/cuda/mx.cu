// SPDX-License-Identifier: GPL-3.0-or-later
// OCP Microscaling on the device: the arithmetic of kernels/mx.cpp, operation for operation.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/microscaling.h"
#include "kernels/minifloat.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

// mx.cpp FloatElement / Int8Element, device-callable.
template <class F>
struct FloatElement {
    static constexpr int emax = F::emax;
    QL_HD static float round(float v) { return copy_sign_of(round_to_grid<F>(abs_bits(v)), v); }
    QL_HD static uint8_t encode(float v) { return static_cast<uint8_t>(encode_element<F>(v)); }
    QL_HD static float decode(uint8_t c) { return decode_element<F>(c); }
    QL_HD static uint8_t nan_code() { return static_cast<uint8_t>(F::nan_code); }
};

struct Int8Element {
    static constexpr int emax = 0;
    QL_HD static float clamped_steps(float v) {
        float k = rne_small(v * 64.0f);  // |v| < 4 here, so |64 v| < 2^23
        k = k > 127.0f ? 127.0f : k;
        k = k < -127.0f ? -127.0f : k;
        return k;
    }
    QL_HD static float round(float v) { return clamped_steps(v) * 0.015625f; }
    QL_HD static uint8_t encode(float v) {
        return static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(clamped_steps(v))));
    }
    QL_HD static float decode(uint8_t c) { return static_cast<float>(static_cast<int8_t>(c)) * 0.015625f; }
    QL_HD static uint8_t nan_code() { return 0; }
};

template <class El>
QL_HD uint8_t scale_byte(float block_amax, MxScaleRule rule, float inv_max) {
    return rule == MxScaleRule::Floor ? e8m0_floor(block_amax, El::emax) : e8m0_round_up(block_amax, inv_max);
}

struct MxBlock {
    float rcp, scale;
    bool nan;
};

QL_HD MxBlock mx_block(uint8_t byte) { return {e8m0_reciprocal(byte), e8m0_to_float(byte), byte == kE8m0Nan}; }

template <class El>
struct FakeOp {
    float* y;
    MxScaleRule rule;
    float inv_max;
    using Stat = AnyAbsmax;
    using Block = MxBlock;
    QL_HD MxBlock block(const Stat& st, int64_t, int64_t, bool) const {
        return mx_block(scale_byte<El>(st.value(), rule, inv_max));
    }
    QL_HD static float fake(float v, const MxBlock& k) {
        return k.nan ? bits_float(0x7FC00000u) : El::round(v * k.rcp) * k.scale;
    }
    QL_HD void elements4(int64_t i, float4 v, const MxBlock& k) const {
        *reinterpret_cast<float4*>(y + i) = make_float4(fake(v.x, k), fake(v.y, k), fake(v.z, k), fake(v.w, k));
    }
    QL_HD void element(int64_t i, float v, const MxBlock& k) const { y[i] = fake(v, k); }
};

template <class El>
struct EncodeOp {
    uint8_t* codes;
    uint8_t* scales;
    MxScaleRule rule;
    float inv_max;
    using Stat = AnyAbsmax;
    using Block = MxBlock;
    QL_HD MxBlock block(const Stat& st, int64_t b, int64_t, bool leader) const {
        const uint8_t byte = scale_byte<El>(st.value(), rule, inv_max);
        if (leader) scales[b] = byte;
        return mx_block(byte);
    }
    QL_HD static uint8_t code(float v, const MxBlock& k) { return k.nan ? El::nan_code() : El::encode(v * k.rcp); }
    QL_HD void elements4(int64_t i, float4 v, const MxBlock& k) const {
        *reinterpret_cast<uchar4*>(codes + i) = make_uchar4(code(v.x, k), code(v.y, k), code(v.z, k), code(v.w, k));
    }
    QL_HD void element(int64_t i, float v, const MxBlock& k) const { codes[i] = code(v, k); }
};

template <class El>
struct DecodeOp {
    const uint8_t* scales;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t b) const { return e8m0_to_float(scales[b]); }
    QL_HD float apply(uint8_t c, float scale) const { return El::decode(c) * scale; }
};

template <class Visitor>
void with_element(MxElement e, const Visitor& v) {
    switch (e) {
        case MxElement::E4M3: v(FloatElement<E4M3>{}); return;
        case MxElement::E5M2: v(FloatElement<E5M2>{}); return;
        case MxElement::E3M2: v(FloatElement<E3M2>{}); return;
        case MxElement::E2M3: v(FloatElement<E2M3>{}); return;
        case MxElement::E2M1: v(FloatElement<E2M1>{}); return;
        case MxElement::Int8: v(Int8Element{}); return;
    }
    invalid("unknown MX element type");
}

// mx.cpp computes 1 / max_element on the host in float32; so do we.
float inverse_max(MxElement e) { return 1.0f / ql::kernels::mx_max_element(e); }

void require_block(const RowBlocks& L) {
    if (L.block <= 0) invalid("MX block size must be positive");
}

}  // namespace

void mx_fake_quant(const float* x, float* y, const RowBlocks& L, MxElement e, MxScaleRule rule, void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_blocks<kMxBlock, 32>("mx_fake_quant", FakeOp<El>{y, rule, inverse_max(e)}, x, L, aligned(y, 16), stream);
    });
}

void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes, uint8_t* scales,
               void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_blocks<kMxBlock, 32>("mx_encode", EncodeOp<El>{codes, scales, rule, inverse_max(e)}, x, L,
                                 aligned(codes, 4), stream);
    });
}

void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e, float* y, void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_block_map<kMxBlock>("mx_decode", DecodeOp<El>{scales}, L, codes, y, stream);
    });
}

}  // namespace ql::kernels::cuda
