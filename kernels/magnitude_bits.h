// SPDX-License-Identifier: GPL-3.0-or-later
// Reductions on float bit patterns. Non-negative floats order like their bits as unsigned
// integers, and any float orders like its "sortable key" as a signed integer; integer max/min
// vectorise without -ffast-math (float max reductions do not, because of NaN and -0.0 rules).
#pragma once

#include "kernels/portable.h"

namespace ql::kernels {

constexpr uint32_t kInfBits = 0x7F800000u;

QL_HD uint32_t magnitude_bits(float x) { return float_bits(x) & 0x7FFFFFFFu; }

// |x| bits for finite x, 0 for NaN and +-Inf (the amax that ignores non-finite values).
// Written as a mask rather than a select so that max-reductions over it vectorise.
QL_HD uint32_t finite_magnitude_bits(float x) {
    const uint32_t a = magnitude_bits(x);
    return a & (0u - static_cast<uint32_t>(a < kInfBits));
}

// Maps a float to a signed integer with the same order (for finite values and +-Inf).
QL_HD int32_t sortable_key(float x) {
    const int32_t b = static_cast<int32_t>(float_bits(x));
    return b ^ ((b >> 31) & 0x7FFFFFFF);
}

QL_HD float from_sortable_key(int32_t k) {
    return bits_float(static_cast<uint32_t>(k ^ ((k >> 31) & 0x7FFFFFFF)));
}

// x for finite x, 0 for NaN/Inf: min/max over these equal min(0, finite min) / max(0, finite
// max), which is exactly what the asymmetric integer range needs.
QL_HD float finite_or_zero(float x) {
    return bits_float(float_bits(x) & (0u - static_cast<uint32_t>(magnitude_bits(x) < kInfBits)));
}

}  // namespace ql::kernels
