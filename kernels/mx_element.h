// SPDX-License-Identifier: GPL-3.0-or-later
// OCP Microscaling per block and per element (formulas in mx.h): the element types, the block's
// scale byte and what its elements need from it, as the CPU kernels (mx.cpp) and the CUDA
// kernels (cuda/mx.cu) both run them.
#pragma once

#include "kernels/microscaling.h"
#include "kernels/minifloat.h"
#include "kernels/mx.h"

namespace ql::kernels {

// Element formats as types, so each one's loops compile to straight-line vector code. Elements
// arrive scaled: v = x * 2^(127 - byte), finite.
template <class F>
struct MxFloatElement {
    static constexpr int emax = F::emax;
    QL_HD static float max_element() { return F::max_finite(); }
    // The grid value (signed) in the scaled domain.
    QL_HD static float round(float v) { return with_sign_of(round_to_grid<F>(abs_bits(v)), v); }
    QL_HD static uint8_t encode(float v) { return static_cast<uint8_t>(encode_element<F>(v)); }
    QL_HD static float decode(uint8_t c) { return decode_element<F>(c); }
    QL_HD static uint8_t nan_code() { return static_cast<uint8_t>(F::nan_code); }
};

// MXINT8: k = clamp(rne(64 v), -127, 127), value k / 64.
struct MxInt8Element {
    static constexpr int emax = 0;
    QL_HD static float max_element() { return 127.0f / 64.0f; }
    QL_HD static float clamped_steps(float v) {
        float k = rne_bounded(v * 64.0f);  // |v| < 2 here (amax < 2^(emax + 1), emax 0), so |64 v| < 128
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

// Calls v(El{}) with the element type of e; false for a value outside the enum.
template <class Visitor>
bool visit_mx_element(MxElement e, const Visitor& v) {
    switch (e) {
        case MxElement::E4M3: v(MxFloatElement<E4M3>{}); return true;
        case MxElement::E5M2: v(MxFloatElement<E5M2>{}); return true;
        case MxElement::E3M2: v(MxFloatElement<E3M2>{}); return true;
        case MxElement::E2M3: v(MxFloatElement<E2M3>{}); return true;
        case MxElement::E2M1: v(MxFloatElement<E2M1>{}); return true;
        case MxElement::Int8: v(MxInt8Element{}); return true;
    }
    return false;
}

// 1 / max_element in float32: the "rceil" rule's factor (e8m0_round_up).
template <class El>
QL_HD float mx_inverse_max() {
    return 1.0f / El::max_element();
}

// The block's E8M0 scale byte from its amax (AnyAbsmax: NaN/Inf give the NaN byte).
template <class El>
QL_HD uint8_t mx_scale_byte(float block_amax, MxScaleRule rule, float inv_max) {
    return rule == MxScaleRule::Floor ? e8m0_floor(block_amax, El::emax) : e8m0_round_up(block_amax, inv_max);
}

// What a block's elements need from its scale byte.
struct MxBlockScale {
    float rcp;    // 2^(127 - byte): brings the elements into the element format's range (exact)
    float scale;  // 2^(byte - 127)
    bool nan;     // the NaN byte: the block held NaN or +-Inf
};

QL_HD MxBlockScale mx_block_scale(uint8_t byte) {
    return {e8m0_reciprocal(byte), e8m0_to_float(byte), byte == kE8m0Nan};
}

// The same two powers of two for a byte that is not the NaN byte (0..254), branch-free so that
// the CPU kernels compute a tile's scales in one vector loop: 2^(127 - byte) is subnormal only
// for byte 254, 2^(byte - 127) only for byte 0.
QL_HD float mx_block_rcp(uint8_t byte) {
    const uint32_t normal = static_cast<uint32_t>(254 - byte) << 23;
    return bits_float(byte == 254 ? 0x00400000u : normal);
}

QL_HD float mx_block_scale_value(uint8_t byte) {
    const uint32_t normal = static_cast<uint32_t>(byte) << 23;
    return bits_float(byte == 0 ? 0x00400000u : normal);
}

// A block with the NaN scale decodes to NaN entirely; its codes are the element's NaN code.
template <class El>
QL_HD float mx_fake_element(float x, const MxBlockScale& k) {
    return k.nan ? bits_float(0x7FC00000u) : El::round(x * k.rcp) * k.scale;
}

template <class El>
QL_HD uint8_t mx_code_element(float x, const MxBlockScale& k) {
    return k.nan ? El::nan_code() : El::encode(x * k.rcp);
}

template <class El>
QL_HD float mx_decode_element(uint8_t code, float scale) {
    return El::decode(code) * scale;
}

}  // namespace ql::kernels
