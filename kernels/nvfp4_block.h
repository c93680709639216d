// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 per block and per element (formulas in nvfp4.h): the block scale and denominator and the
// element functions that the CPU kernels (nvfp4.cpp) and the CUDA kernels (cuda/nvfp4.cu) both
// run. Branch-free, so that the CPU loops vectorise.
#pragma once

#include "kernels/minifloat.h"

namespace ql::kernels {

// The block's scale before E4M3 rounding: s = block_amax / (6 g), 1 where that is 0 (an all-zero
// block, or an underflow). six_g = 6 * g.
QL_HD float nvfp4_block_scale(float block_amax, float six_g) {
    const float s = block_amax / six_g;
    return (block_amax == 0.0f || s == 0.0f) ? 1.0f : s;
}

// The stored scale byte s8 = E4M3(s).
QL_HD uint8_t nvfp4_scale_code(float s) { return static_cast<uint8_t>(encode_element<E4M3>(s)); }

// The block's denominator float(s8) * g. decode(encode(s)) is s rounded onto the E4M3 grid, sign
// kept, so it is computed as that rounding (which vectorises); a NaN s (only from a NaN g) gives
// a NaN denominator either way.
QL_HD float nvfp4_denominator(float s, float g) { return with_sign_of(round_to_grid<E4M3>(abs_bits(s)), s) * g; }

// The same from the stored byte (decoding).
QL_HD float nvfp4_denominator_of_code(uint8_t s8, float g) { return decode_element<E4M3>(s8) * g; }

// Fake quantization of one element of a block with denominator d. d == 0 (the E4M3 scale
// underflowed) decodes to zeros; NaN stays NaN.
QL_HD float nvfp4_fake_element(float v, float d) {
    const float q = round_to_grid<E2M1>(abs_bits(v / d)) * d;
    const float r = d == 0.0f ? 0.0f : copy_sign_of(q, v);
    return is_nan_bits(v) ? v : r;
}

// The same for a block whose denominator is known to be positive (the CPU kernels test that once
// per tile): q is then >= 0, so v's sign bit is simply or-ed in.
QL_HD float nvfp4_fake_element_positive_d(float v, float d) {
    const float q = round_to_grid<E2M1>(abs_bits(v / d)) * d;
    return is_nan_bits(v) ? v : with_sign_of(q, v);
}

// E2M1 code of one element: NaN -> E2M1's NaN code (7), d == 0 -> 0, sign bit for v < 0 (so
// -0.0 encodes as 0, as Model Optimizer's _cast_fp4 does).
// E2M1 magnitude code of a >= 0 (not NaN; +Inf saturates to 7): grid_code(round_to_grid(a)) as
// a count of the rounding thresholds a passes. The thresholds are the midpoints of the grid
// {0, .5, 1, 1.5, 2, 3, 4, 6}; a tie goes to the even code (strict > where the lower neighbour's
// code is even, >= where the upper one's is). Equal to grid_code(round_to_grid(a)) for every
// non-negative float (checked exhaustively over all 2^31 bit patterns while writing it;
// tests/kernels/nvfp4_test.cpp checks each threshold's neighbourhood), and it vectorises to
// seven compares.
QL_HD unsigned e2m1_magnitude_code(float a) {
    return static_cast<unsigned>(a > 0.25f) + static_cast<unsigned>(a >= 0.75f) + static_cast<unsigned>(a > 1.25f) +
           static_cast<unsigned>(a >= 1.75f) + static_cast<unsigned>(a > 2.5f) + static_cast<unsigned>(a >= 3.5f) +
           static_cast<unsigned>(a > 5.0f);
}

// Branch-free (selects, so the encode loop vectorises): the quotient is computed for every
// element and a NaN quotient (0 / 0, NaN / d) is replaced by 0, so the discarded lanes stay
// well defined.
QL_HD uint8_t nvfp4_code_element(float v, float d) {
    const float a = abs_bits(v / d);
    const unsigned mag = e2m1_magnitude_code(is_nan_bits(a) ? 0.0f : a);
    const unsigned c = d == 0.0f ? 0u : (mag | (v < 0.0f ? 8u : 0u));
    return static_cast<uint8_t>(is_nan_bits(v) ? E2M1::nan_code : c);
}

QL_HD float nvfp4_decode_element(uint8_t code, float d) { return decode_element<E2M1>(code) * d; }

}  // namespace ql::kernels
