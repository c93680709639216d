// SPDX-License-Identifier: GPL-3.0-or-later
// Small floating-point element formats (FP8 E4M3/E5M2, FP6 E3M2/E2M3, FP4 E2M1): encode with
// round-half-to-even and saturation, decode, and "round onto the grid" in float32.
// Definitions: shared/design/FORMATS.md, "Element formats". Sources followed: pytorch
// c10/util/Float8_e4m3fn.h and Float8_e5m2.h (RNE), Model Optimizer's __NV_SATFINITE behaviour
// (overflow and +-Inf saturate to +-max finite), OCP MX v1.0 for FP6/FP4.
#pragma once

#include "kernels/portable.h"

namespace ql::kernels {

// E exponent bits, M mantissa bits, BIAS exponent bias, MAX_CODE the magnitude code of the
// largest finite value, NAN_CODE the magnitude code written for a NaN input, SIGNED_NAN whether
// that NaN code keeps the input's sign (FP8) or is always positive (FP6/FP4 have no NaN; NaN
// maps to +max there).
template <int E, int M, int BIAS, unsigned MAX_CODE, unsigned NAN_CODE, bool SIGNED_NAN>
struct Minifloat {
    static constexpr int exp_bits = E;
    static constexpr int man_bits = M;
    static constexpr int bias = BIAS;
    static constexpr int emin = 1 - BIAS;  // unbiased exponent of the smallest normal
    static constexpr unsigned max_code = MAX_CODE;
    static constexpr unsigned nan_code = NAN_CODE;
    static constexpr bool signed_nan = SIGNED_NAN;
    static constexpr unsigned sign_bit = 1u << (E + M);
    static constexpr unsigned magnitude_mask = sign_bit - 1u;
    static constexpr int emax = static_cast<int>(MAX_CODE >> M) - BIAS;  // exponent of max finite

    // Largest finite value: (1 + m / 2^M) * 2^emax with m the mantissa of MAX_CODE.
    QL_HD static float max_finite() {
        return static_cast<float>((1u << M) + (MAX_CODE & ((1u << M) - 1u))) * pow2_normal(emax - M);
    }
};

using E4M3 = Minifloat<4, 3, 7, 0x7E, 0x7F, true>;   // max 448, NaN 0x7F, no Inf
using E5M2 = Minifloat<5, 2, 15, 0x7B, 0x7F, true>;  // max 57344, Inf 0x7C, NaN 0x7D..0x7F
using E3M2 = Minifloat<3, 2, 3, 0x1F, 0x1F, false>;  // max 28
using E2M3 = Minifloat<2, 3, 1, 0x1F, 0x1F, false>;  // max 7.5
using E2M1 = Minifloat<2, 1, 1, 0x7, 0x7, false>;    // max 6: {0, .5, 1, 1.5, 2, 3, 4, 6}

// Rounds a non-negative magnitude a (not NaN; +Inf allowed) to the nearest value of the
// format's grid, ties to even, saturating at max finite. The result is exact float32 with its
// sign bit clear (never -0; a NaN a would give max finite).
//
// Saturating first is the same as saturating after (rounding is monotone and max finite is on
// the grid); it is an integer minimum of the bits (non-negative floats order like their bits),
// which GCC keeps one vector instruction where a float select became a compare and a blend.
// Within the binade of c = min(a, max) (or the format's subnormal range) the grid spacing is
// 2^(e - M), e = max(exponent(c), emin): adding 2^(e - M + 23) makes that spacing the unit in
// the last place of the sum, so the sum rounds c half to even onto the grid and subtracting it
// again is exact. Seven vector instructions. Equal to scaling by 2^(M - e), rounding to an
// integer and scaling back (the previous implementation) for every non-negative float32 and +Inf,
// checked exhaustively for E4M3, E5M2, E3M2, E2M3, E2M1 and binary16 while writing it;
// tests/kernels/minifloat_test.cpp checks every grid point and midpoint and their neighbours.
template <class F>
QL_HD float round_to_grid(float a) {
    const uint32_t mx = float_bits(F::max_finite());
    const uint32_t cb = float_bits(a) < mx ? float_bits(a) : mx;
    constexpr uint32_t emin_field = static_cast<uint32_t>(F::emin + 127);
    uint32_t e = cb >> 23;  // c >= 0: the biased exponent
    e = e < emin_field ? emin_field : e;
    const float magic = bits_float((e + static_cast<uint32_t>(23 - F::man_bits)) << 23);
    const float c = bits_float(cb);
    return (c + magic) - magic;
}

// Magnitude code of a value that is already on the grid (0 <= q <= max finite). Scaling q by
// 2^(-126 - emin) puts the format's smallest normal on float32's smallest normal (exact: q has at
// most M significant bits below 2^emin), so the float32 bits, shifted, are the code for normal and
// subnormal values alike.
template <class F>
QL_HD unsigned grid_code(float q) {
    return float_bits(q * pow2_normal(-126 - F::emin)) >> (23 - F::man_bits);
}

// Encodes x: RNE, saturating (+-Inf -> +-max), NaN -> nan_code (sign kept for FP8 only).
template <class F>
QL_HD unsigned encode_element(float x) {
    const unsigned sign = (float_bits(x) >> 31) ? F::sign_bit : 0u;
    if (is_nan_bits(x)) return F::signed_nan ? (sign | F::nan_code) : F::nan_code;
    return sign | grid_code<F>(round_to_grid<F>(abs_bits(x)));
}

// Decodes a code (only the low E+M+1 bits are read). Exact.
template <class F>
QL_HD float decode_element(unsigned code) {
    const unsigned mag = code & F::magnitude_mask;
    const unsigned e = mag >> F::man_bits;
    const unsigned m = mag & ((1u << F::man_bits) - 1u);
    float v;
    if (F::exp_bits == 4 && F::man_bits == 3 && mag == 0x7Fu) {
        v = bits_float(0x7FC00000u);  // E4M3: the only NaN; no Inf
    } else if (F::exp_bits == 5 && e == 31u) {
        v = m == 0 ? bits_float(0x7F800000u) : bits_float(0x7FC00000u);  // E5M2 Inf / NaN
    } else if (e == 0) {
        v = static_cast<float>(m) * pow2_normal(F::emin - F::man_bits);
    } else {
        v = static_cast<float>((1u << F::man_bits) + m) *
            pow2_normal(static_cast<int>(e) - F::bias - F::man_bits);
    }
    return (code & F::sign_bit) ? -v : v;
}

// Fake-quantizes one element: the decoded value of encode_element(x), except that NaN stays NaN
// (the FP6/FP4 NaN code would decode to max; fake quantization keeps the NaN visible).
template <class F>
QL_HD float fake_quant_element(float x) {
    if (is_nan_bits(x)) return x;
    return with_sign_of(round_to_grid<F>(abs_bits(x)), x);
}

}  // namespace ql::kernels
