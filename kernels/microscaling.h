// SPDX-License-Identifier: GPL-3.0-or-later
// OCP Microscaling (MX) shared block scales: E8M0 bytes, 2^(byte - 127).
// FORMATS.md "OCP Microscaling": scale exponent = floor(log2(block_amax)) - emax_elem, with the
// floor taken from the float32 exponent bits (torchao prototype/mx_formats/mx_tensor.py, to_mx,
// ScaleCalculationMode.FLOOR); the "rceil" rule rounds amax / max_elem up to a power of two
// (torchao _to_mx_rceil, the rule NVIDIA hardware recipes use).
#pragma once

#include "kernels/portable.h"

namespace ql::kernels {

constexpr uint8_t kE8m0Nan = 0xFF;

enum class MxScaleRule : uint8_t { Floor = 0, RoundUp = 1 };

// Block amax (>= 0, or NaN/Inf when the block holds one) -> E8M0 byte, floor rule.
QL_HD uint8_t e8m0_floor(float block_amax, int emax_elem) {
    if (!is_finite_bits(block_amax)) return kE8m0Nan;
    int e = exponent_field(block_amax) - emax_elem;
    e = e < -127 ? -127 : (e > 127 ? 127 : e);
    return static_cast<uint8_t>(e + 127);
}

// Block amax -> E8M0 byte, "rceil" rule: descale = amax * (1 / max_elem) in float32, then
// rounded up to a power of two (a subnormal descale above 2^-127 rounds up to 2^-126).
QL_HD uint8_t e8m0_round_up(float block_amax, float inv_max_elem) {
    if (!is_finite_bits(block_amax)) return kE8m0Nan;
    const float descale = block_amax * inv_max_elem;
    const uint32_t b = float_bits(descale);
    const uint32_t biased = (b >> 23) & 0xFFu;
    const uint32_t mant = b & 0x7FFFFFu;
    const uint32_t up = biased == 0 ? (mant > 0x400000u ? 1u : 0u) : (mant != 0 ? 1u : 0u);
    const uint32_t r = biased + up;
    return static_cast<uint8_t>(r > 254u ? 254u : r);
}

// 2^(byte - 127) as float32 (byte 0 is the subnormal 2^-127; 0xFF is NaN).
QL_HD float e8m0_to_float(uint8_t byte) {
    if (byte == kE8m0Nan) return bits_float(0x7FC00000u);
    return pow2_any(static_cast<int>(byte) - 127);
}

// 2^(127 - byte): the exact reciprocal of the scale, used to bring elements into range.
QL_HD float e8m0_reciprocal(uint8_t byte) { return pow2_any(127 - static_cast<int>(byte)); }

}  // namespace ql::kernels
