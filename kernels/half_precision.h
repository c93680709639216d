// SPDX-License-Identifier: GPL-3.0-or-later
// IEEE binary16 (FP16) and bfloat16 conversions with round-half-to-even, as numpy's
// astype(float16), x86 F16C and CUDA __float2half_rn do: overflow goes to Inf (no saturation).
#pragma once

#include "kernels/minifloat.h"

namespace ql::kernels {

// binary16 seen as a minifloat: 5 exponent bits, 10 mantissa bits, bias 15, max 65504.
using Half = Minifloat<5, 10, 15, 0x7BFF, 0x7E00, true>;

QL_HD uint16_t fp32_to_fp16_bits(float x) {
    // 65520 is the midpoint between 65504 and 2^16; RNE sends it (and above) to Inf.
    if (!is_nan_bits(x) && abs_bits(x) >= 65520.0f)
        return static_cast<uint16_t>(((float_bits(x) >> 16) & 0x8000u) | 0x7C00u);
    return static_cast<uint16_t>(encode_element<Half>(x));
}

QL_HD float fp16_bits_to_fp32(uint16_t h) { return decode_element<Half>(h); }

QL_HD uint16_t fp32_to_bf16_bits(float x) {
    const uint32_t b = float_bits(x);
    if (is_nan_bits(x)) return static_cast<uint16_t>((b >> 16) | 0x0040u);  // quiet NaN
    return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

QL_HD float bf16_bits_to_fp32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// bf16_bits_to_fp32(fp32_to_bf16_bits(x)) without going through 16 bits (five vector
// instructions and a select): the rounding add, then the low half cleared; NaN quieted.
QL_HD float bf16_round_trip(float x) {
    const uint32_t b = float_bits(x);
    const uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    const uint32_t quiet_nan = (b | 0x00400000u) & 0xFFFF0000u;
    return bits_float(is_nan_bits(x) ? quiet_nan : rounded);
}

// fp16_bits_to_fp32(fp32_to_fp16_bits(x)) as float arithmetic: the binary16 grid rounding of |x|,
// Inf from 65520 up, x's sign; a NaN becomes the quiet NaN with x's sign. Both forms were compared
// for all 2^32 float32 bit patterns while writing it (tests/kernels/minifloat_test.cpp samples).
QL_HD float fp16_round_trip(float x) {
    const float a = abs_bits(x);
    const float r = a >= 65520.0f ? bits_float(0x7F800000u) : round_to_grid<Half>(a);
    const float v = with_sign_of(r, x);
    return is_nan_bits(x) ? bits_float(0x7FC00000u | (float_bits(x) & 0x80000000u)) : v;
}

}  // namespace ql::kernels
