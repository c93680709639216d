// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nf4.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/block_magnitude_max.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/nf4_rounding.h"

namespace ql::kernels {
namespace {

// Decision boundaries of a sorted codebook: the float32 midpoints (c[i] + c[i+1]) / 2, as
// bitsandbytes 0.50's default backend computes them; code(s) = number of midpoints < s
// (torch.bucketize, right=False), so an exact midpoint goes to the lower index.
std::vector<float> thresholds_of(const float* book, int n) {
    std::vector<float> t(static_cast<size_t>(n - 1));
    for (int i = 0; i + 1 < n; ++i) t[i] = (book[i] + book[i + 1]) / 2.0f;
    return t;
}

// ATen's float32 sum order for a contiguous 1-D tensor (aten/src/ATen/native/cpu/SumKernel.cpp:
// vectorized_inner_sum -> row_sum with 4-way ILP over 8-lane vectors -> multi_row_sum cascading
// partial sums in levels of 16), then the division by n that mean() does in float32. Matching
// it makes the double-quantization offset bit-identical to bitsandbytes' absmax.mean().
float cascade_mean(const float* x, int64_t n) {
    if (n == 0) return 0.0f;
    constexpr int64_t kLanes = 8, kIlp = 4, kLevels = 4;
    using Vec = std::array<float, kLanes>;
    auto add = [](Vec& a, const Vec& b) {
        for (int64_t l = 0; l < kLanes; ++l) a[l] += b[l];
    };
    auto load = [&](int64_t v) {
        Vec r;
        for (int64_t l = 0; l < kLanes; ++l) r[l] = x[v * kLanes + l];
        return r;
    };
    const int64_t vec_size = n / kLanes;
    const int64_t size_ilp = vec_size / kIlp;
    // multi_row_sum over rows of kIlp vectors.
    int64_t ceil_log2 = 1;
    if (size_ilp > 2) {
        ceil_log2 = 0;
        while ((int64_t{1} << ceil_log2) < size_ilp) ++ceil_log2;
    }
    const int64_t level_power = std::max<int64_t>(4, ceil_log2 / kLevels);
    const int64_t level_step = int64_t{1} << level_power;
    const int64_t level_mask = level_step - 1;
    Vec zero{};
    std::array<std::array<Vec, kIlp>, kLevels> acc;
    for (auto& lv : acc) lv.fill(zero);
    int64_t i = 0;
    for (; i + level_step <= size_ilp;) {
        for (int64_t j = 0; j < level_step; ++j, ++i)
            for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], load(i * kIlp + k));
        for (int64_t j = 1; j < kLevels; ++j) {
            for (int64_t k = 0; k < kIlp; ++k) {
                add(acc[j][k], acc[j - 1][k]);
                acc[j - 1][k] = zero;
            }
            if ((i & (level_mask << (j * level_power))) != 0) break;
        }
    }
    for (; i < size_ilp; ++i)
        for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], load(i * kIlp + k));
    for (int64_t j = 1; j < kLevels; ++j)
        for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], acc[j][k]);
    std::array<Vec, kIlp> partial = acc[0];
    for (int64_t v = size_ilp * kIlp; v < vec_size; ++v) add(partial[0], load(v));
    for (int64_t k = 1; k < kIlp; ++k) add(partial[0], partial[k]);
    float total = 0.0f;
    for (int64_t e = vec_size * kLanes; e < n; ++e) total += x[e];
    for (int64_t l = 0; l < kLanes; ++l) total += partial[0][l];
    return total / static_cast<float>(n);
}

// The NF4 tables in one object: the kernels take a local copy of it, which the compiler then
// keeps in registers.
struct Nf4Tables {
    float thresholds[15];
    float codebook[16];

    Nf4Tables() {
        const float* th = nf4_thresholds();
        for (int i = 0; i < 15; ++i) thresholds[i] = th[i];
        for (int i = 0; i < 16; ++i) codebook[i] = kNf4Codebook[i];
    }
};

QL_INLINE float block_absmax(const float* x, int64_t len) { return statistic_of<FiniteAbsmax>(x, len).value(); }

QL_INLINE void fake_quant_range(const float* __restrict x, float* __restrict y, int64_t len, float absmax,
                                const Nf4Tables& shared) {
    const Nf4Tables r = shared;
    const BlockwiseScale k = blockwise_scale(absmax, false);
    for (int64_t i = 0; i < len; ++i) y[i] = nf4_fake_element(x[i], k, r.thresholds, r.codebook);
}

// The NF4 rounding of eight lanes at once by bisection, for the tiled fake-quant loops: four
// compares against thresholds picked by the bits found so far (a select, then two in-register
// table lookups), and the value looked up from the code, where the count of all 15 thresholds
// took 15 compares and 15 selects (3.9 cycles per element on 2 Zen 3 cores, 0.36x memcpy).
// Compares, selects and lane shuffles are exact, so the codes are those of nf4_code (the
// thresholds are sorted, so "the number of thresholds below s" is what the bisection finds; an
// exact midpoint and NaN compare false at every level, as in nf4_code), in every clone.
// Written with GCC vector extensions (one AVX2 register); __builtin_shuffle with a variable
// index becomes vpermps, which reads the low three bits of each index lane.
namespace nf4_lanes {

using F8 = float __attribute__((vector_size(32)));
using I8 = int32_t __attribute__((vector_size(32)));
using U8 = uint32_t __attribute__((vector_size(32)));

// Casts between same-sized GCC vectors reinterpret the bits.
QL_INLINE U8 reinterpret_cast_u8(I8 v) { return (U8)v; }
QL_INLINE I8 reinterpret_cast_i8(U8 v) { return (I8)v; }

QL_INLINE F8 load8(const float* p) {
    F8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
QL_INLINE void store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
QL_INLINE F8 splat8(float f) { return F8{} + f; }

// The tables, indexed as the bisection builds its indices. A compare yields -1 for true, so
// the sums of masks below are minus the bits: k = -(2 b3 + b2) and j = -(4 b3 + 2 b2 + b1), and
// a lookup reads lane (-k) mod 8. The level-3 threshold of the prefix (b3, b2) is
// t[8 b3 + 4 b2 + 1], the level-4 one of (b3, b2, b1) is t[8 b3 + 4 b2 + 2 b1], and the code is
// 2 (4 b3 + 2 b2 + b1) + b0.
struct Tables {
    F8 t3, t7, t11;  // the level-1 and level-2 thresholds, broadcast
    F8 level3;       // lane (8 - p) & 7 holds t[4 p + 1], p = 2 b3 + b2
    F8 level4;       // lane (8 - q) & 7 holds t[2 q], q = 4 b3 + 2 b2 + b1
    F8 even, odd;    // lane (8 - q) & 7 holds codebook[2 q] / codebook[2 q + 1]
    F8 lower, upper; // the clamp bounds -1 and 1 (as data, see clamp8)

    Tables() {
        const float* t = nf4_thresholds();
        t3 = splat8(t[3]);
        t7 = splat8(t[7]);
        t11 = splat8(t[11]);
        for (int p = 0; p < 4; ++p) level3[(8 - p) & 7] = t[4 * p + 1];
        for (int p = 4; p < 8; ++p) level3[(8 - p) & 7] = 0.0f;  // never read: p < 4
        for (int q = 0; q < 8; ++q) {
            level4[(8 - q) & 7] = t[2 * q];
            even[(8 - q) & 7] = kNf4Codebook[2 * q];
            odd[(8 - q) & 7] = kNf4Codebook[2 * q + 1];
        }
        lower = splat8(-1.0f);
        upper = splat8(1.0f);
    }
};

// clamp_unit of eight lanes: NaN passes both selects, as in clamp_unit.
QL_INLINE F8 clamp8(F8 s, const Tables& t) {
    s = s > t.upper ? t.upper : s;
    return s < t.lower ? t.lower : s;
}

// The bisection of eight lanes s already in [-1, 1] (or NaN): j = -q for the code's upper three
// bits q = 4 b3 + 2 b2 + b1, and m0 = -b0 for its lowest (the code is 2 q + b0).
struct Bisection8 {
    I8 j, m0;
};

QL_INLINE Bisection8 bisect8(F8 s, const Tables& t) {
    const I8 m3 = s > t.t7;
    const F8 th2 = m3 ? t.t11 : t.t3;
    const I8 m2 = s > th2;
    const I8 k = m3 + m3 + m2;
    const I8 m1 = s > __builtin_shuffle(t.level3, k);
    const I8 j = k + k + m1;
    return {j, s > __builtin_shuffle(t.level4, j)};
}

// nf4_value(s) of eight lanes s already in [-1, 1] (or NaN).
QL_INLINE F8 value8(F8 s, const Tables& t) {
    const Bisection8 b = bisect8(s, t);
    return b.m0 ? __builtin_shuffle(t.odd, b.j) : __builtin_shuffle(t.even, b.j);
}

// nf4_code(s) of eight lanes: the index value8 looks up, 2 q + b0.
QL_INLINE I8 code8(F8 s, const Tables& t) {
    const Bisection8 b = bisect8(s, t);
    return -(b.j + b.j + b.m0);
}

// The codebook in two registers, for decoding codes 0..15 with two in-register lookups.
struct Codebook8 {
    F8 low, high;  // codebook[0..7], codebook[8..15]
    Codebook8() {
        for (int i = 0; i < 8; ++i) {
            low[i] = kNf4Codebook[i];
            high[i] = kNf4Codebook[8 + i];
        }
    }
};

QL_INLINE F8 decode8(I8 code, const Codebook8& c) {
    const I8 high = (code & 8) != 0;
    return high ? __builtin_shuffle(c.high, code) : __builtin_shuffle(c.low, code);
}

// The codes of one full block as eight 32-bit words: lane l of word... chunk c (elements
// 8c..8c+7) occupies bits 4c..4c+3 of lane l. A transposed layout private to the two passes
// below: one shift and one OR per eight elements to pack, one shift and one AND to unpack.
struct BlockCodes {
    uint32_t lanes[8];
};

// Pass 1 of the double-quantized fake quantization: the codes of one full block from its exact
// absmax (s = clamp(x * inv), as fake_block64), and whether it holds a NaN.
QL_INLINE bool encode_block64(const float* __restrict x, float inv, const Tables& t, BlockCodes& out) {
    const F8 vinv = splat8(inv);
    U8 packed{};
    I8 nan{};
    for (int c = 0; c < kNf4Block / 8; ++c) {
        const F8 v = load8(x + 8 * c);
        packed |= reinterpret_cast_u8(code8(clamp8(v * vinv, t), t)) << (4 * c);
        nan |= v != v;
    }
    std::memcpy(out.lanes, &packed, sizeof packed);
    int32_t any = 0;
    for (int l = 0; l < 8; ++l) any |= nan[l];
    return any != 0;
}

// Pass 2: the block's values codebook[code] * multiplier; with `has_nan`, NaN elements of x
// become the canonical NaN (x is read only then, before y is written: y may be x).
QL_INLINE void decode_block64(const BlockCodes& codes, float multiplier, bool has_nan, const float* x, float* y,
                              const Codebook8& book) {
    U8 packed;
    std::memcpy(&packed, codes.lanes, sizeof packed);
    const F8 vmul = splat8(multiplier);
    const F8 nan_out = splat8(bits_float(0x7FC00000u));
    for (int c = 0; c < kNf4Block / 8; ++c) {
        F8 q = decode8(reinterpret_cast_i8((packed >> (4 * c)) & 15), book) * vmul;
        if (has_nan) {
            const F8 v = load8(x + 8 * c);
            q = v != v ? nan_out : q;
        }
        store8(y + 8 * c, q);
    }
}

// Fake quantization of one full block of kNf4Block elements: s = clamp(x * inv), the value
// times the block's absmax; NaN inputs are kept as they are.
QL_INLINE void fake_block64(const float* __restrict x, float* __restrict y, float inv, float multiplier,
                            const Tables& t) {
    const F8 vinv = splat8(inv), vmul = splat8(multiplier);
    for (int c = 0; c < kNf4Block; c += 8) {
        const F8 v = load8(x + c);
        const F8 q = value8(clamp8(v * vinv, t), t) * vmul;
        const I8 nan = v != v;
        store8(y + c, nan ? v : q);
    }
}

}  // namespace nf4_lanes

// Blocks of 64 in tiles of 8: the eight absmaxes at once (block_magnitude_max.h), then each
// block by bisection (nf4_lanes) with the block's scale broadcast.
QL_INLINE void fake_quant_blocks64(const float* __restrict x, float* __restrict y, int64_t nblocks,
                                   const nf4_lanes::Tables& t) {
    constexpr int64_t kTile = 8;
    float amax[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * kNf4Block;
        float* yt = y + t0 * kNf4Block;
        finite_block_amax<kNf4Block>(xt, nt, amax);
        for (int64_t b = 0; b < nt; ++b) {
            const BlockwiseScale k = blockwise_scale(amax[b], false);
            nf4_lanes::fake_block64(xt + b * kNf4Block, yt + b * kNf4Block, k.inv, k.absmax, t);
        }
    }
}

// Pass 1 of the double-quantized fake quantization of full blocks of 64, in tiles of eight
// blocks: the absmaxes (block_magnitude_max.h), then each block's codes while the tile is in L1,
// and its NaN flag. x is read from memory once.
QL_INLINE void encode_blocks64(const float* __restrict x, int64_t nblocks, float* __restrict amax,
                               nf4_lanes::BlockCodes* __restrict codes, uint8_t* __restrict has_nan,
                               const nf4_lanes::Tables& t) {
    constexpr int64_t kTile = 8;
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        finite_block_amax<kNf4Block>(x + t0 * kNf4Block, nt, amax + t0);
        // The tile two ahead, while this one is rounded from L1: the hardware prefetcher alone left
        // memory idle during the rounding (two-pass path 0.47x memcpy without, 0.56-0.61x with).
        if (t0 + 3 * kTile <= nblocks)
            for (int64_t line = 0; line < kTile * kNf4Block; line += 16)
                __builtin_prefetch(x + (t0 + 2 * kTile) * kNf4Block + line);
        for (int64_t b = t0; b < t0 + nt; ++b) {
            const BlockwiseScale k = blockwise_scale(amax[b], false);
            has_nan[b] = nf4_lanes::encode_block64(x + b * kNf4Block, k.inv, t, codes[b]);
        }
    }
}

// Pass 2: values from the codes times each block's reconstructed absmax dq[b].
QL_INLINE void decode_blocks64(const nf4_lanes::BlockCodes* __restrict codes, const uint8_t* __restrict has_nan,
                               const float* __restrict dq, int64_t nblocks, const float* x, float* y,
                               const nf4_lanes::Codebook8& book) {
    for (int64_t b = 0; b < nblocks; ++b)
        nf4_lanes::decode_block64(codes[b], dq[b], has_nan[b] != 0, x + b * kNf4Block, y + b * kNf4Block, book);
}

// The dynamic-map codes of up to kNf4DoubleQuantBlock centred, scaled absmaxes: dynamic_map_code
// of each, its eight bisection steps taken for all of them at once (a gather per step in the
// AVX2 clone), where one value at a time waited on eight dependent loads and mispredicted
// selects (a quarter of nf4_double's time).
QL_INLINE void dynamic_map_codes(const float* __restrict s, int64_t len, const float* __restrict thresholds,
                                 uint8_t* __restrict codes) {
    int32_t lo[kNf4DoubleQuantBlock];
    for (int64_t i = 0; i < len; ++i) lo[i] = 0;
    for (int32_t step = 128; step > 0; step /= 2)
        for (int64_t i = 0; i < len; ++i) lo[i] += s[i] > thresholds[lo[i] + step - 1] ? step : 0;
    for (int64_t i = 0; i < len; ++i) codes[i] = static_cast<uint8_t>(lo[i]);
}

QL_INLINE void encode_range(const float* __restrict x, uint8_t* __restrict codes, int64_t len, const BlockwiseScale& k,
                            const Nf4Tables& shared) {
    const Nf4Tables r = shared;
    for (int64_t i = 0; i < len; ++i) codes[i] = nf4_code_element(x[i], k, r.thresholds);
}

QL_INLINE void decode_range(const uint8_t* __restrict codes, float* __restrict y, int64_t len, float absmax,
                            const Nf4Tables& shared) {
    const Nf4Tables r = shared;
    for (int64_t i = 0; i < len; ++i) y[i] = nf4_decode_element(codes[i], absmax, r.codebook);
}

const Nf4Tables& tables() {
    static const Nf4Tables r;
    return r;
}

const nf4_lanes::Tables& lane_tables() {
    static const nf4_lanes::Tables t;
    return t;
}

const nf4_lanes::Codebook8& lane_codebook() {
    static const nf4_lanes::Codebook8 c;
    return c;
}

}  // namespace

const float kNf4Codebook[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

const float* nf4_thresholds() {
    static const std::vector<float> t = thresholds_of(kNf4Codebook, 16);
    return t.data();
}

const float* dynamic_map_thresholds() {
    static const std::vector<float> t = thresholds_of(kDynamicMapSigned, 256);
    return t.data();
}

float aten_float_mean(const float* x, int64_t n) { return cascade_mean(x, n); }

int nf4_code_of(float s) { return nf4_code(s, tables().thresholds); }

int dynamic_map_code_of(float s) { return dynamic_map_code(s, dynamic_map_thresholds()); }

void nf4_fake_quant(const float* x, float* y, int64_t n, int64_t block) {
    const Nf4Tables& r = tables();
    const RowBlocks L{1, n, block};
    if (block == kNf4Block && n % block == 0) {
        const nf4_lanes::Tables& t = lane_tables();
        parallel_ranges(n / block, 512, 1, [&](int64_t b0, int64_t b1) {
            run_cpu_clone(
                [&]() QL_CLONE_BODY { fake_quant_blocks64(x + b0 * block, y + b0 * block, b1 - b0, t); });
        });
        return;
    }
    parallel_ranges(L.block_count(), std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            const float am = block_absmax(x + off, len);
            if (len < block) {
                const BlockwiseScale k = blockwise_scale(am, true);
                for (int64_t i = off; i < off + len; ++i) y[i] = nf4_fake_element(x[i], k, r.thresholds, r.codebook);
                continue;
            }
            run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_range(x + off, y + off, len, am, r); });
        }
    });
}

void nf4_encode(const float* x, int64_t n, int64_t block, uint8_t* codes, float* absmax) {
    const Nf4Tables& r = tables();
    const int64_t nb = (n + block - 1) / block;
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            const BlockwiseScale k = blockwise_scale(block_absmax(x + off, len), len < block);
            absmax[b] = k.absmax;
            run_cpu_clone([&]() QL_CLONE_BODY { encode_range(x + off, codes + off, len, k, r); });
        }
    });
}

void nf4_decode(const uint8_t* codes, const float* absmax, int64_t n, int64_t block, float* y) {
    const Nf4Tables& r = tables();
    const int64_t nb = (n + block - 1) / block;
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            run_cpu_clone([&]() QL_CLONE_BODY { decode_range(codes + off, y + off, len, absmax[b], r); });
        }
    });
}

void nf4_double_quant(const float* absmax, int64_t nblocks, uint8_t* codes8, float* absmax2, float* offset) {
    const float off = cascade_mean(absmax, nblocks);
    *offset = off;
    const float* thresholds = dynamic_map_thresholds();
    const int64_t nb2 = (nblocks + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock;
    // The blocks of 256 are independent once the offset is known: one pass per thread-range.
    parallel_ranges(nb2, 16, 1, [&](int64_t b0, int64_t b1) {
        float centred[kNf4DoubleQuantBlock];
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t o = b * kNf4DoubleQuantBlock;
            const int64_t len = std::min(kNf4DoubleQuantBlock, nblocks - o);
            for (int64_t i = 0; i < len; ++i) centred[i] = absmax[o + i] - off;
            // bitsandbytes' quantize_blockwise (default backend): the same scaling as quantize_4bit.
            const BlockwiseScale k = blockwise_scale(block_absmax(centred, len), len < kNf4DoubleQuantBlock);
            absmax2[b] = k.absmax;
            for (int64_t i = 0; i < len; ++i) centred[i] = k.scaled(centred[i]);
            run_cpu_clone([&]() QL_CLONE_BODY { dynamic_map_codes(centred, len, thresholds, codes8 + o); });
        }
    });
}

void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks,
                        float* absmax_out) {
    parallel_ranges(nblocks, 1 << 14, kNf4DoubleQuantBlock, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            absmax_out[i] = dynamic_map_decode(codes8[i], absmax2[i / kNf4DoubleQuantBlock], offset, kDynamicMapSigned);
    });
}

// Full blocks of 64 in two passes: the absmaxes and the codes (rounded with each block's exact
// absmax) in one read of x into a buffer of half a byte per element, the double quantization of
// the absmaxes (one value per block), then the values from the codes times the reconstructed
// absmaxes. The earlier form read x twice (absmaxes, then rounding and scaling): 12 bytes of
// traffic per element against this one's 9; on a 2-core Zen 3, alternating runs, 0.52-0.53x
// memcpy against this one's 0.57-0.61x (issue 22, docs/BENCHMARKS.md).
// Other block sizes and a short last block: the absmaxes first, then one fused pass reading x
// again. Both equal, bit for bit, encoding, double-quantizing, dequantizing and decoding (what a
// QLoRA checkpoint decodes to; tests/kernels/nf4_test.cpp checks that).
void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block) {
    const int64_t nb = (n + block - 1) / block;
    if (nb == 0) return;
    std::vector<float> absmax(static_cast<size_t>(nb)), absmax_dq(static_cast<size_t>(nb));
    std::vector<uint8_t> codes8(static_cast<size_t>(nb));
    std::vector<float> absmax2(static_cast<size_t>((nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock));
    const bool tiled = block == kNf4Block;
    const int64_t full = tiled ? n / block : 0;  // blocks taking the two-pass path
    // The codes buffer is kept per calling thread: allocating half a byte per element afresh cost
    // a page fault and a page clear per 4 KiB on every call (0.36x memcpy instead of 0.47x). The
    // workers reach it through the pointer (a thread_local named in the lambdas would be theirs).
    static thread_local std::vector<nf4_lanes::BlockCodes> codes_buffer;
    if (codes_buffer.size() < static_cast<size_t>(full)) codes_buffer.resize(static_cast<size_t>(full));
    nf4_lanes::BlockCodes* const codes = codes_buffer.data();
    std::vector<uint8_t> has_nan(static_cast<size_t>(full));
    const nf4_lanes::Tables& t = lane_tables();
    // Absmaxes as nf4_encode stores them (a short last block's clamped), with the codes of full blocks.
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), tiled ? 8 : 1, [&](int64_t b0, int64_t b1) {
        const int64_t fe = std::min(b1, full);
        if (b0 < fe)
            run_cpu_clone([&]() QL_CLONE_BODY {
                encode_blocks64(x + b0 * block, fe - b0, absmax.data() + b0, codes + b0, has_nan.data() + b0, t);
            });
        for (int64_t b = std::max(b0, fe); b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            absmax[b] = blockwise_scale(block_absmax(x + off, len), len < block).absmax;
        }
    });
    float offset = 0.0f;
    nf4_double_quant(absmax.data(), nb, codes8.data(), absmax2.data(), &offset);
    nf4_double_dequant(codes8.data(), absmax2.data(), offset, nb, absmax_dq.data());
    const Nf4Tables& r = tables();
    const nf4_lanes::Codebook8& book = lane_codebook();
    const float nan_out = bits_float(0x7FC00000u);
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        const int64_t fe = std::min(b1, full);
        if (b0 < fe)
            run_cpu_clone([&]() QL_CLONE_BODY {
                decode_blocks64(codes + b0, has_nan.data() + b0, absmax_dq.data() + b0, fe - b0,
                                x + b0 * block, y + b0 * block, book);
            });
        for (int64_t b = std::max(b0, fe); b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            const BlockwiseScale k = blockwise_scale(absmax[b], len < block);
            const float m = absmax_dq[b];
            for (int64_t i = off; i < off + len; ++i) {
                const float v = x[i];
                y[i] = is_nan_bits(v) ? nan_out : nf4_value(k.scaled(v), r.thresholds, r.codebook) * m;
            }
        }
    });
}

}  // namespace ql::kernels
