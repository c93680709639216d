// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nf4.h"

#include <algorithm>
#include <array>
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

// The same tables with every value repeated across kLanes lanes, for the tiled fake-quant loop:
// the 31 values do not fit in 16 vector registers, and a compare or blend can take a whole
// vector from memory but not a broadcast scalar (before AVX-512), so without these each of the
// 15 steps cost two broadcasts besides its compare and blend.
struct Nf4LaneTables {
    static constexpr int kLanes = 16;  // one AVX-512 register, two AVX2 registers
    alignas(64) float thresholds[15][kLanes];
    alignas(64) float codebook[16][kLanes];
    // The clamp bounds -1 and 1 as data: with the constants, GCC merged the two selects of the
    // clamp into three compares and three blends; with bounds it cannot see, they stay a vector
    // min and max (NaN passes both, as in clamp_unit).
    alignas(64) float lower[kLanes];
    alignas(64) float upper[kLanes];

    Nf4LaneTables() {
        const float* th = nf4_thresholds();
        for (int l = 0; l < kLanes; ++l) {
            lower[l] = -1.0f;
            upper[l] = 1.0f;
            for (int i = 0; i < 15; ++i) thresholds[i][l] = th[i];
            for (int i = 0; i < 16; ++i) codebook[i][l] = kNf4Codebook[i];
        }
    }
};

// nf4_fake_element (nf4_rounding.h) for lane l of a chunk of kLanes elements, reading the
// lane tables: the same compares and selects, in the same order.
QL_INLINE float nf4_fake_lane(float x, const BlockwiseScale& k, const Nf4LaneTables& t, int l) {
    float s = x * k.inv;  // k.scaled(x) of a full block, clamped with the bounds from memory
    s = s > t.upper[l] ? t.upper[l] : s;
    s = s < t.lower[l] ? t.lower[l] : s;
    float v = t.codebook[0][l];
    for (int i = 0; i < 15; ++i) {
        const float next = t.codebook[i + 1][l];  // loaded unconditionally: a conditional load became a masked load
        v = s > t.thresholds[i][l] ? next : v;
    }
    const float q = v * k.absmax;
    return is_nan_bits(x) ? x : q;
}

QL_INLINE void fake_quant_range(const float* __restrict x, float* __restrict y, int64_t len, float absmax,
                                const Nf4Tables& shared) {
    const Nf4Tables r = shared;
    const BlockwiseScale k = blockwise_scale(absmax, false);
    for (int64_t i = 0; i < len; ++i) y[i] = nf4_fake_element(x[i], k, r.thresholds, r.codebook);
}

// Blocks of 64 in tiles of 8: the eight absmaxes at once (block_magnitude_max.h), then each
// block's elements in chunks of Nf4LaneTables::kLanes with the scale broadcast.
QL_INLINE void fake_quant_blocks64(const float* __restrict x, float* __restrict y, int64_t nblocks,
                                   const Nf4LaneTables& t) {
    constexpr int64_t kTile = 8;
    constexpr int kLanes = Nf4LaneTables::kLanes;
    float amax[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * kNf4Block;
        float* yt = y + t0 * kNf4Block;
        finite_block_amax<kNf4Block>(xt, nt, amax);
        for (int64_t b = 0; b < nt; ++b) {
            const BlockwiseScale k = blockwise_scale(amax[b], false);
            const float* xb = xt + b * kNf4Block;
            float* yb = yt + b * kNf4Block;
            for (int c = 0; c < kNf4Block; c += kLanes)
                for (int l = 0; l < kLanes; ++l) yb[c + l] = nf4_fake_lane(xb[c + l], k, t, l);
        }
    }
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

const Nf4LaneTables& lane_tables() {
    static const Nf4LaneTables t;
    return t;
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
        const Nf4LaneTables& t = lane_tables();
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
    std::vector<float> centred(static_cast<size_t>(nblocks));
    for (int64_t i = 0; i < nblocks; ++i) centred[i] = absmax[i] - off;
    for (int64_t b = 0; b < nb2; ++b) {
        const int64_t o = b * kNf4DoubleQuantBlock;
        const int64_t len = std::min(kNf4DoubleQuantBlock, nblocks - o);
        // bitsandbytes' quantize_blockwise (default backend): the same scaling as quantize_4bit.
        const BlockwiseScale k = blockwise_scale(block_absmax(centred.data() + o, len), len < kNf4DoubleQuantBlock);
        absmax2[b] = k.absmax;
        for (int64_t i = o; i < o + len; ++i)
            codes8[i] = static_cast<uint8_t>(dynamic_map_code(k.scaled(centred[i]), thresholds));
    }
}

void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks,
                        float* absmax_out) {
    for (int64_t i = 0; i < nblocks; ++i)
        absmax_out[i] = dynamic_map_decode(codes8[i], absmax2[i / kNf4DoubleQuantBlock], offset, kDynamicMapSigned);
}

void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block) {
    const int64_t nb = (n + block - 1) / block;
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    std::vector<float> absmax(static_cast<size_t>(nb)), absmax_dq(static_cast<size_t>(nb));
    std::vector<uint8_t> codes8(static_cast<size_t>(nb));
    std::vector<float> absmax2(static_cast<size_t>((nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock));
    float offset = 0.0f;
    nf4_encode(x, n, block, codes.data(), absmax.data());
    nf4_double_quant(absmax.data(), nb, codes8.data(), absmax2.data(), &offset);
    nf4_double_dequant(codes8.data(), absmax2.data(), offset, nb, absmax_dq.data());
    // y may alias x: remember where the NaN inputs were before decoding over them.
    std::vector<int64_t> nan_at;
    for (int64_t i = 0; i < n; ++i)
        if (is_nan_bits(x[i])) nan_at.push_back(i);
    nf4_decode(codes.data(), absmax_dq.data(), n, block, y);
    for (int64_t i : nan_at) y[i] = bits_float(0x7FC00000u);
}

}  // namespace ql::kernels
