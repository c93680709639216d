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

// ---- Accumulators over these images (block and channel statistics, CPU and CUDA) ----------
// Stat{} is the identity; add() takes an element, merge() another partial result. The CUDA
// drivers combine them across lanes (team_reduce in kernels/cuda/block_drivers.cuh).

// max |x| as bits. FINITE: over finite x only (0 when there is none). Otherwise NaN and Inf count
// too, and a value >= Inf (bits >= kInfBits) marks a non-finite block: the statistic OCP MX
// scales are computed from.
template <bool FINITE>
struct MaxMagnitude {
    uint32_t m = 0;
    QL_HD void add(float v) {
        const uint32_t a = FINITE ? finite_magnitude_bits(v) : magnitude_bits(v);
        m = a > m ? a : m;
    }
    QL_HD void merge(const MaxMagnitude& o) { m = o.m > m ? o.m : m; }
    QL_HD float value() const { return bits_float(m); }
};

using FiniteAbsmax = MaxMagnitude<true>;
using AnyAbsmax = MaxMagnitude<false>;

// min(0, finite x) and max(0, finite x) as sortable keys (the key of 0.0f is 0).
struct FiniteRange {
    int32_t lo = 0, hi = 0;
    QL_HD void add(float v) {
        const int32_t k = sortable_key(finite_or_zero(v));
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    QL_HD void merge(const FiniteRange& o) {
        lo = o.lo < lo ? o.lo : lo;
        hi = o.hi > hi ? o.hi : hi;
    }
    QL_HD float min_value() const { return from_sortable_key(lo); }
    QL_HD float max_value() const { return from_sortable_key(hi); }
};

// The statistic of x[0..n).
template <class Stat>
QL_HD Stat statistic_of(const float* x, int64_t n) {
    Stat s{};
    for (int64_t i = 0; i < n; ++i) s.add(x[i]);
    return s;
}

}  // namespace ql::kernels
