// SPDX-License-Identifier: GPL-3.0-or-later
// The maximum |x| of eight consecutive blocks at once, for the block formats' tiles (NVFP4: 16,
// MX: 32, NF4: 64 elements per block). CPU only.
//
// Written with GCC vector extensions (8 x uint32, one AVX2 register): vertical integer maxima of
// the magnitude bits within each block, then three shuffle-and-max steps that fold eight
// partial vectors into one vector holding the eight block maxima. Left to itself, GCC vectorised
// the per-block maxima across blocks with a transpose of every element (3.4 instructions per
// element on x86-64-v3, callgrind; this is 0.4). Integer maxima and shuffles are exact, so every
// clone gives the same bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {

namespace lanes {

using U32x8 = uint32_t __attribute__((vector_size(32)));
using I32x8 = int32_t __attribute__((vector_size(32)));

QL_INLINE U32x8 load_magnitude(const float* p) {
    U32x8 v;
    std::memcpy(&v, p, sizeof v);
    return v & 0x7FFFFFFFu;
}

QL_INLINE U32x8 max_of(U32x8 a, U32x8 b) { return a > b ? a : b; }

// Lanes {i[0], ..., i[7]} of the 16 lanes of a and b (b's lanes are 8..15).
QL_INLINE U32x8 pick(U32x8 a, U32x8 b, I32x8 i) { return __builtin_shuffle(a, b, i); }

}  // namespace lanes

// out[b] = max over block b of the magnitude bits of x (bits & 0x7FFFFFFF), for the 8 blocks of
// BLOCK floats starting at x (BLOCK a multiple of 8). NaN and +-Inf count (their bits are
// >= kInfBits): callers that want the finite maximum recompute the rare blocks that hold one.
template <int BLOCK>
QL_INLINE void magnitude_max_8_blocks(const float* __restrict x, uint32_t* __restrict out) {
    static_assert(BLOCK % 8 == 0, "blocks of whole 8-lane vectors");
    using lanes::I32x8;
    using lanes::U32x8;
    U32x8 v[8];
    for (int b = 0; b < 8; ++b) {
        U32x8 m = lanes::load_magnitude(x + b * BLOCK);
        for (int k = 8; k < BLOCK; k += 8) m = lanes::max_of(m, lanes::load_magnitude(x + b * BLOCK + k));
        v[b] = m;
    }
    // Halves: lanes 0-3 of w[k] belong to block 2k, lanes 4-7 to block 2k + 1.
    U32x8 w[4];
    for (int k = 0; k < 4; ++k)
        w[k] = lanes::max_of(lanes::pick(v[2 * k], v[2 * k + 1], I32x8{0, 1, 2, 3, 8, 9, 10, 11}),
                             lanes::pick(v[2 * k], v[2 * k + 1], I32x8{4, 5, 6, 7, 12, 13, 14, 15}));
    // Quarters: u[k] lanes (0,1) block 4k, (2,3) block 4k + 2, (4,5) block 4k + 1, (6,7) 4k + 3.
    U32x8 u[2];
    for (int k = 0; k < 2; ++k)
        u[k] = lanes::max_of(lanes::pick(w[2 * k], w[2 * k + 1], I32x8{0, 1, 8, 9, 4, 5, 12, 13}),
                             lanes::pick(w[2 * k], w[2 * k + 1], I32x8{2, 3, 10, 11, 6, 7, 14, 15}));
    // Pairs of lanes: blocks in the order 0, 2, 4, 6, 1, 3, 5, 7, then put in order.
    const U32x8 r = lanes::max_of(lanes::pick(u[0], u[1], I32x8{0, 2, 8, 10, 4, 6, 12, 14}),
                                  lanes::pick(u[0], u[1], I32x8{1, 3, 9, 11, 5, 7, 13, 15}));
    const U32x8 ordered = __builtin_shuffle(r, I32x8{0, 4, 1, 5, 2, 6, 3, 7});
    std::memcpy(out, &ordered, sizeof ordered);
}

// The finite maximum |x| (FiniteAbsmax) of nblocks blocks of BLOCK floats, into amax[b] as
// floats: eight blocks at a time, the rest and the blocks that hold NaN or Inf one by one.
template <int BLOCK>
QL_INLINE void finite_block_amax(const float* __restrict x, int64_t nblocks, float* __restrict amax) {
    int64_t b = 0;
    for (; b + 8 <= nblocks; b += 8) {
        uint32_t m[8];
        magnitude_max_8_blocks<BLOCK>(x + b * BLOCK, m);
        for (int k = 0; k < 8; ++k) amax[b + k] = bits_float(m[k]);
    }
    for (; b < nblocks; ++b) amax[b] = bits_float(statistic_of<AnyAbsmax>(x + b * BLOCK, BLOCK).m);
    // Whether any block holds a NaN or Inf, as one vectorised maximum: a compare and branch per
    // block cost 0.3 instructions per element for NVFP4's blocks of 16 (callgrind, x86-64-v3).
    uint32_t largest = 0;
    for (b = 0; b < nblocks; ++b) largest = float_bits(amax[b]) > largest ? float_bits(amax[b]) : largest;
    if (largest < kInfBits) return;
    for (b = 0; b < nblocks; ++b)
        if (float_bits(amax[b]) >= kInfBits) amax[b] = statistic_of<FiniteAbsmax>(x + b * BLOCK, BLOCK).value();
}

// The same with NaN and Inf included (AnyAbsmax, what OCP MX scales are computed from).
template <int BLOCK>
QL_INLINE void any_block_amax(const float* __restrict x, int64_t nblocks, float* __restrict amax) {
    int64_t b = 0;
    for (; b + 8 <= nblocks; b += 8) {
        uint32_t m[8];
        magnitude_max_8_blocks<BLOCK>(x + b * BLOCK, m);
        for (int k = 0; k < 8; ++k) amax[b + k] = bits_float(m[k]);
    }
    for (; b < nblocks; ++b) amax[b] = statistic_of<AnyAbsmax>(x + b * BLOCK, BLOCK).value();
}

}  // namespace ql::kernels
