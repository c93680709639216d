// SPDX-License-Identifier: GPL-3.0-or-later
// One super-block (256 elements) of each i-quant / ternary type, byte for byte what ggml's
// quantize_iq*_* / quantize_tq*_0 write (ggml-quants.c of llama-cpp-python 0.3.36; the scalar
// transcription kernels/reference/reference_iquants.cpp says it line by line). The searches are
// ggml's, reorganised where that is exact: neighbour searches and IQ1's split searches measure
// eight candidates per SIMD operation (gguf_iquant_search.h), and the candidate scales of IQ2 /
// IQ3, which ggml tries one after the other, are all evaluated before ggml's sequential
// acceptance is replayed over them. Inputs are finite (gguf_iquant_cpu.cpp clears NaN / Inf);
// qw: 256 importance values or nullptr. CPU only; included by gguf_iquant_cpu.cpp.
#pragma once

#include <cmath>
#include <cstring>

#include "kernels/gguf_iquant_codec.h"
#include "kernels/gguf_iquant_search.h"
#include "kernels/gguf_kquant_search.h"

namespace ql::kernels::iquant {

using kquant::clamp_int;
using kquant::nearest_int;
using kquant::store_fp16;

constexpr int QK_K = 256;

QL_INLINE float sum_squares(const float* x) {
    float s = 0.0f;
    for (int i = 0; i < QK_K; ++i) s += x[i] * x[i];
    return s;
}

// The even-parity sign trick of IQ2_XXS / IQ2_XS / IQ3_XXS (ggml inlines it in each): groups of
// 8 get |x|; with an odd number of negatives the element of smallest weight * x^2 (the first on
// ties) keeps its sign wrong. block_signs: the 7 stored sign bits per group.
QL_INLINE void even_signs(const float* xb, const float* weight, float* xval, uint8_t* block_signs, int groups) {
    for (int k = 0; k < groups; ++k) {
        int nflip = 0;
        unsigned s = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            const bool neg = !(v >= 0);
            xval[8 * k + i] = neg ? -v : v;
            nflip += neg;
            s |= static_cast<unsigned>(neg) << i;
        }
        if (nflip % 2) {
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= 1u << imin;
        }
        block_signs[k] = static_cast<uint8_t>(s & 127);
    }
}

QL_INLINE void plain_signs(const float* xb, float* xval, uint8_t* block_signs, int groups) {
    for (int k = 0; k < groups; ++k) {
        unsigned s = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            const bool neg = !(v >= 0);
            xval[8 * k + i] = neg ? -v : v;
            s |= static_cast<unsigned>(neg) << i;
        }
        block_signs[k] = static_cast<uint8_t>(s);
    }
}

// u of D level indices and its map entry.
template <int D>
QL_INLINE int32_t map_entry(const LatticeSearch& s, const int8_t* L, int bits) {
    int u = 0;
    for (int i = 0; i < D; ++i) u |= L[i] << (bits * i);
    return s.map[static_cast<size_t>(u)];
}

// The point a final L stands on; ggml aborts when it is off the grid ("Oops: found point not on
// grid"), which only NaN scales reach: the list's first point then.
template <int D>
QL_INLINE int point_of(const LatticeSearch& s, const int8_t* L, int bits) {
    const int32_t m = map_entry<D>(s, L, bits);
    return m >= 0 ? m : s.indices[list_of(s, m).first];
}

// L = clamp(nearest_int(0.5 (id x - 1)), 0, kmax - 1) for D values.
template <int D>
QL_INLINE void levels_for(float id, const float* xval, int kmax, int8_t* L) {
    for (int i = 0; i < D; ++i) L[i] = static_cast<int8_t>(clamp_int(nearest_int(0.5f * (id * xval[i] - 1)), 0, kmax - 1));
}

// The same for N values (a multiple of 8), eight per SIMD operation (finite x: nearest_int's NaN
// case cannot arise).
template <int N>
QL_INLINE void levels_for_all(float id, const float* xval, int kmax, int8_t* L) {
    for (int i = 0; i < N; i += 8) {
        const F8 v = splat8(0.5f) * (splat8(id) * load8(xval + i) - 1.0f);
        I8 l = ((I8)(v + 12582912.0f) & 0x007FFFFF) - 0x00400000;
        l = select8i(l > 0, l, I8{});
        l = select8i(l < kmax - 1, l, I8{} + (kmax - 1));
        for (int k = 0; k < 8; ++k) L[i + k] = static_cast<int8_t>(l[k]);
    }
}

// What ggml does after its candidate scales when some groups ended off the grid.
enum class Refit { OffGridGroups, AllGroups };

// ggml's scale search of one IQ2 / IQ3 sub-block of N elements in groups of D (the loop
// "for (int is = lo; is <= hi; ++is)" of quantize_row_iq2_xxs_impl / iq2_xs / iq2_s / iq3_xxs /
// iq3_s): candidate inverse scales id = (2 kmax - 1 + is step) / base, each group's levels
// rounded and moved to the nearest lattice point when off it, the weighted least-squares scale
// of each candidate accepted when it beats the best so far. Then, when `refit_always` or some
// group of the accepted candidate was off the grid (and scale > 0), the groups are requantized
// with the accepted scale and the scale refit. L: in, the levels ggml starts from; out, the
// chosen levels. Returns the scale.
template <int N, int D>
QL_INLINE float grid_scale_search(const LatticeSearch& s, const float* xval, const float* weight, const float* waux,
                                  int kmax, int is_lo, int is_hi, float step, float base, float scale,
                                  bool on_grid_initially, bool refit_always, Refit refit, int8_t* L) {
    constexpr int G = N / D;
    const int bits = s.table->bits;
    constexpr int kMaxTrials = 31;
    int8_t Laux[kMaxTrials][N];
    bool on_aux[kMaxTrials][G];
    alignas(32) float qt[N][kMaxTrials + 1];  // candidate t's q_i = 2 L + 1, transposed
    const int trials = is_hi - is_lo + 1;
    for (int t = 0; t < trials; ++t) {
        const float id = (static_cast<float>(2 * kmax - 1) + static_cast<float>(is_lo + t) * step) / base;
        const float this_scale = 1 / id;
        int8_t* La = Laux[t];
        levels_for_all<N>(id, xval, kmax, La);
        for (int k = 0; k < G; ++k) {
            const int32_t m = map_entry<D>(s, La + D * k, bits);
            on_aux[t][k] = m >= 0;
            if (m < 0) nearest_point<D>(s, list_of(s, m), xval + D * k, waux + D * k, this_scale, nullptr, La + D * k);
        }
        for (int i = 0; i < N; ++i) qt[i][t] = static_cast<float>(2 * La[i] + 1);
    }
    for (int i = 0; i < N; ++i)
        for (int t = trials; t < kMaxTrials + 1; ++t) qt[i][t] = 0.0f;
    // sumqx = sum (w x) q and sumq2 = sum (w q) q in element order, eight candidates per lane vector.
    CandidateScan scan(0.0f);
    for (int t0 = 0; t0 < trials; t0 += 8) {
        F8 sumqx = splat8(0.0f), sumq2 = splat8(0.0f);
        for (int i = 0; i < N; ++i) {
            const F8 q = load8(&qt[i][t0]);
            sumqx = sumqx + splat8(weight[i] * xval[i]) * q;
            sumq2 = sumq2 + (splat8(weight[i]) * q) * q;
        }
        scan.offer8<1>(t0, trials - t0 < 8 ? trials - t0 : 8, &sumqx, &sumq2);
    }
    bool on_grid[G];
    for (int k = 0; k < G; ++k) on_grid[k] = on_grid_initially;
    if (scan.chosen >= 0) {
        scale = scan.scale;
        std::memcpy(L, Laux[scan.chosen], N);
        for (int k = 0; k < G; ++k) on_grid[k] = on_aux[scan.chosen][k];
    }
    bool any_off = false;
    for (int k = 0; k < G; ++k) any_off = any_off || !on_grid[k];
    if ((refit_always || any_off) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < G; ++k) {
            if (refit == Refit::OffGridGroups && on_grid[k]) continue;
            levels_for<D>(id, xval + D * k, kmax, L + D * k);
            const int32_t m = map_entry<D>(s, L + D * k, bits);
            if (m < 0) nearest_point<D>(s, list_of(s, m), xval + D * k, waux + D * k, scale, nullptr, L + D * k);
        }
        float sumqx = 0, sumq2 = 0;
        for (int i = 0; i < N; ++i) {
            const float w = weight[i];
            const float q = static_cast<float>(2 * L[i] + 1);
            sumqx += w * xval[i] * q;
            sumq2 += w * q * q;
        }
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return scale;
}

QL_INLINE float fmax_ggml(float a, float b) { return a > b ? a : b; }  // MAX

// ---- IQ2_XXS ------------------------------------------------------------------------------------

QL_INLINE void encode_iq2_xxs(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(Lattice::IQ2_XXS);
    const float sigma2 = sum_squares(x) / QK_K;
    float scales[8];
    uint32_t q2[16] = {};
    float max_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        float weight[32], waux[32], xval[32];
        uint8_t block_signs[4];
        int8_t L[32];
        for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        even_signs(xb, weight, xval, block_signs, 4);
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = fmax_ggml(max, xval[i]);
        if (max < 1e-15f) {
            scales[ib] = 0;
            continue;
        }
        float scale = kquant::make_qp_quants<32>(4, xval, reinterpret_cast<uint8_t*>(L), weight);
        const float eff_max = scale * 3;
        if (eff_max <= 0) {
            scales[ib] = 0;
            continue;
        }
        // ggml refits every group whenever scale > 0 (and never consults is_on_grid).
        scale = grid_scale_search<32, 8>(s, xval, weight, waux, 3, -6, 6, 0.1f, eff_max, scale, true, true, Refit::AllGroups, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k] & 127);
        }
        for (int k = 0; k < 4; ++k) {
            q2[2 * ib] |= static_cast<uint32_t>(point_of<8>(s, L + 8 * k, 2)) << (8 * k);
            q2[2 * ib + 1] |= static_cast<uint32_t>(block_signs[k]) << (7 * k);
        }
        scales[ib] = scale;
        max_scale = fmax_ggml(max_scale, scale);
    }
    std::memset(y, 0, 66);
    if (!max_scale) return;  // d = +0 and zero codes
    const float d = max_scale / 31;
    store_fp16(y, d);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib)
        q2[2 * ib + 1] |= static_cast<uint32_t>(clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15)) << 28;
    for (int k = 0; k < 16; ++k) put_u32(y + 2 + 4 * k, q2[k]);
}

// ---- IQ2_XS / IQ2_S -------------------------------------------------------------------------------

template <bool S>  // false: IQ2_XS (74 B), true: IQ2_S (82 B)
QL_INLINE void encode_iq2_xs_s(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(S ? Lattice::IQ2_S : Lattice::IQ2_XS);
    constexpr int bb = S ? 82 : 74;
    std::memset(y, 0, bb);
    const float sumx2 = sum_squares(x);
    const float sigma2 = S ? 2 * sumx2 / QK_K : sumx2 / QK_K;
    float scales[16];
    float max_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        float weight[16], waux[16], xval[16];
        uint8_t block_signs[2];
        int8_t L[16] = {};
        if (qw) {
            for (int i = 0; i < 16; ++i) weight[i] = qw[16 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
        }
        for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
        if (S)
            plain_signs(xb, xval, block_signs, 2);
        else
            even_signs(xb, weight, xval, block_signs, 2);
        float max = xval[0];
        for (int i = 1; i < 16; ++i) max = fmax_ggml(max, xval[i]);
        if (max < (S ? 1e-8f : 1e-15f)) {
            scales[ib] = 0;
            continue;
        }
        float scale = grid_scale_search<16, 8>(s, xval, weight, waux, 3, -9, 9, 0.1f, max, max / 5, true, false,
                                               Refit::OffGridGroups, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; ++k) block_signs[k] = static_cast<uint8_t>(S ? ~block_signs[k] : ~block_signs[k] & 127);
        }
        for (int k = 0; k < 2; ++k) {
            const int point = point_of<8>(s, L + 8 * k, 2);
            if (S) {
                const int i8 = 2 * ib + k;
                y[2 + i8] = static_cast<uint8_t>(point & 255);
                y[66 + i8 / 4] = static_cast<uint8_t>(y[66 + i8 / 4] | ((point >> 8) << (2 * (i8 % 4))));
                y[34 + i8] = block_signs[k];
            } else {
                put_u16(y + 2 + 2 * (2 * ib + k), static_cast<uint32_t>(point | (block_signs[k] << 9)));
            }
        }
        scales[ib] = scale;
        max_scale = fmax_ggml(max_scale, scale);
    }
    if (!max_scale) {
        if (!S) std::memset(y + 2, 0, 64);
        return;
    }
    const float d = max_scale / 31;
    store_fp16(y, S ? d * 0.9875f : d);
    const float id = 1 / d;
    uint8_t* ysc = y + (S ? 74 : 66);
    for (int ib = 0; ib < 16; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        ysc[ib / 2] = static_cast<uint8_t>(ib % 2 == 0 ? l : ysc[ib / 2] | (l << 4));
    }
}

// ---- IQ3_XXS / IQ3_S ------------------------------------------------------------------------------

QL_INLINE void encode_iq3_xxs(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(Lattice::IQ3_XXS);
    const float sigma2 = 2 * sum_squares(x) / QK_K;
    float scales[8];
    uint8_t q3[64] = {};
    uint32_t scales_and_signs[8] = {};
    float max_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        float weight[32], waux[32], xval[32];
        uint8_t block_signs[4];
        int8_t L[32] = {};
        if (qw) {
            for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
        }
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        even_signs(xb, weight, xval, block_signs, 4);
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = fmax_ggml(max, xval[i]);
        if (max < 1e-8f) {
            scales[ib] = 0;
            continue;
        }
        float scale = grid_scale_search<32, 4>(s, xval, weight, waux, 8, -15, 15, 0.2f, max, max / 15, true, false,
                                               Refit::OffGridGroups, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k] & 127);
        }
        for (int k = 0; k < 8; ++k) q3[8 * ib + k] = static_cast<uint8_t>(point_of<4>(s, L + 4 * k, 3));
        scales_and_signs[ib] = static_cast<uint32_t>(block_signs[0] | (block_signs[1] << 7) | (block_signs[2] << 14) |
                                                     (block_signs[3] << 21));
        scales[ib] = scale;
        max_scale = fmax_ggml(max_scale, scale);
    }
    std::memset(y, 0, 98);
    if (!max_scale) return;
    const float d = max_scale / 31;
    store_fp16(y, d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib)
        scales_and_signs[ib] |= static_cast<uint32_t>(clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15)) << 28;
    std::memcpy(y + 2, q3, 64);
    for (int ib = 0; ib < 8; ++ib) put_u32(y + 66 + 4 * ib, scales_and_signs[ib]);
}

QL_INLINE void encode_iq3_s(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(Lattice::IQ3_S);
    std::memset(y, 0, 110);
    const float sigma2 = 2 * sum_squares(x) / QK_K;
    float scales[8];
    float max_scale = 0;
    // ggml advances its qs and signs pointers only past sub-blocks it quantizes: an all-zero
    // sub-block leaves its slots to the next one (qh is indexed by the sub-block itself).
    int slot = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        float weight[32], waux[32], xval[32];
        uint8_t block_signs[4];
        int8_t L[32] = {};
        if (qw) {
            for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
        }
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        plain_signs(xb, xval, block_signs, 4);
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = fmax_ggml(max, xval[i]);
        if (!max) {
            scales[ib] = 0;
            continue;
        }
        float scale = grid_scale_search<32, 4>(s, xval, weight, waux, 8, -9, 9, 0.2f, max, max / 15, false, false,
                                               Refit::AllGroups, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k]);
        }
        for (int k = 0; k < 8; ++k) {
            const int point = point_of<4>(s, L + 4 * k, 3);
            y[2 + 8 * slot + k] = static_cast<uint8_t>(point & 255);
            y[66 + ib] = static_cast<uint8_t>(y[66 + ib] | ((point >> 8) << k));
        }
        for (int k = 0; k < 4; ++k) y[74 + 4 * slot + k] = block_signs[k];
        ++slot;
        scales[ib] = scale;
        max_scale = fmax_ggml(max_scale, scale);
    }
    if (!max_scale) return;
    const float d = max_scale / 31;
    store_fp16(y, d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2) {
        const int l1 = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        const int l2 = clamp_int(nearest_int(0.5f * (id * scales[ib + 1] - 1)), 0, 15);
        y[106 + ib / 2] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
}

// ---- IQ1_S / IQ1_M -----------------------------------------------------------------------------------

// ggml sorts (value, index) pairs with qsort by value; glibc's qsort is a merge sort for arrays
// this small, so equal values keep their index order: a stable insertion sort gives the same.
template <int N>
QL_INLINE void sort_indices_by_value(const float* xb, int* idx) {
    for (int j = 0; j < N; ++j) {
        int k = j;
        while (k > 0 && xb[idx[k - 1]] > xb[j]) {
            idx[k] = idx[k - 1];
            --k;
        }
        idx[k] = j;
    }
}

// The per-group level values of IQ1: {-1, 0, 1} + delta with delta = +-0.125.
constexpr float kIq1P[3] = {-1 + kIq1Delta, kIq1Delta, 1 + kIq1Delta};
constexpr float kIq1M[3] = {-1 - kIq1Delta, -kIq1Delta, 1 - kIq1Delta};

QL_INLINE void encode_iq1_s(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(Lattice::IQ1_S);
    const float sigma2 = 2 * sum_squares(x) / QK_K;
    float scales[8];
    int shifts[8];
    uint16_t qh[8] = {};
    std::memset(y, 0, 50);
    float max_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        float weight[32];
        for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < 32; ++i) max = fmax_ggml(max, std::fabs(xb[i]));
        scales[ib] = 0;
        shifts[ib] = 1;
        if (max < 1e-12f) continue;
        int idx[32];
        sort_indices_by_value<32>(xb, idx);
        alignas(32) float sumx[33 + 8], sumw[33 + 8];
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < 32; ++j) {
            sumx[j + 1] = sumx[j] + weight[idx[j]] * xb[idx[j]];
            sumw[j + 1] = sumw[j] + weight[idx[j]];
        }
        for (int j = 33; j < 41; ++j) sumx[j] = sumw[j] = 0;
        // Candidates (i1, i2, shift) in ggml's order: i1, then i2 >= i1, then x_p before x_m.
        CandidateScan scan(-FLT_MAX);
        const float tx = sumx[32], tw = sumw[32];
        for (int i1 = 0; i1 <= 32; ++i1) {
            const float a = sumx[i1] - sumx[0], aw = sumw[i1] - sumw[0];
            for (int i2 = i1; i2 <= 32; i2 += 8) {
                const F8 s2 = load8(sumx + i2), w2 = load8(sumw + i2);
                const F8 b = s2 - splat8(sumx[i1]), c = splat8(tx) - s2;
                const F8 bw = w2 - splat8(sumw[i1]), cw = splat8(tw) - w2;
                F8 qx[2], q2[2];
                for (int v = 0; v < 2; ++v) {
                    const float* xs = v == 0 ? kIq1P : kIq1M;
                    qx[v] = (splat8(a * xs[0]) + b * xs[1]) + c * xs[2];
                    q2[v] = (splat8(aw * xs[0] * xs[0]) + (bw * xs[1]) * xs[1]) + (cw * xs[2]) * xs[2];
                }
                scan.offer8<2>(2 * (33 * i1 + i2), 33 - i2 < 8 ? 33 - i2 : 8, qx, q2);
            }
        }
        if (scan.chosen < 0) continue;
        float scale = scan.scale;
        const int pair = scan.chosen / 2, besti1 = pair / 33, besti2 = pair % 33;
        int best_shift = scan.chosen % 2 == 0 ? 1 : -1;
        int8_t L[32];
        for (int j = 0; j < 32; ++j) L[idx[j]] = static_cast<int8_t>(j < besti1 ? 0 : j < besti2 ? 1 : 2);
        if (scale < 0) {
            for (int j = 0; j < 32; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
            scale = -scale;
            best_shift = -best_shift;
        }
        const float* xx = best_shift == 1 ? kIq1P : kIq1M;
        bool all_on_grid = true;
        int index[4];
        for (int k = 0; k < 4; ++k) {
            const int32_t m = map_entry<8>(s, L + 8 * k, 2);
            if (m >= 0) {
                index[k] = m;
            } else {
                all_on_grid = false;
                index[k] = nearest_point<8>(s, list_of(s, m), xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k);
            }
        }
        if (!all_on_grid) {
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < 4; ++k)
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[s.point_levels[static_cast<size_t>(index[k] * 8 + j)]];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        unsigned h = 0;
        for (int k = 0; k < 4; ++k) {
            y[2 + 4 * ib + k] = static_cast<uint8_t>(index[k] & 255);
            h |= static_cast<unsigned>(index[k] >> 8) << (3 * k);
        }
        qh[ib] = static_cast<uint16_t>(h);
        scales[ib] = scale;
        shifts[ib] = best_shift;
        max_scale = fmax_ggml(max_scale, scale);
    }
    if (max_scale) {
        const float d = max_scale / 15;
        store_fp16(y, d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ++ib) {
            int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
            if (shifts[ib] == -1) l |= 8;
            qh[ib] = static_cast<uint16_t>(qh[ib] | (l << 12));
        }
    }
    for (int ib = 0; ib < 8; ++ib) put_u16(y + 34 + 2 * ib, qh[ib]);
}

QL_INLINE void iq1_m_weights(const float* xb, const float* qw, float sigma2, float* weight) {
    if (qw) {
        for (int i = 0; i < 16; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    } else {
        for (int i = 0; i < 16; ++i) weight[i] = xb[i] * xb[i];
    }
}

QL_INLINE void encode_iq1_m(const float* x, const float* qw, uint8_t* y) {
    const LatticeSearch& s = lattice_search(Lattice::IQ1_S);
    constexpr uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    std::memset(y, 0, 56);
    const float sigma2 = 2 * sum_squares(x) / QK_K;
    float scales[16];
    int shifts[16];
    float max_scale = 0;
    // x_p or x_m for group k of a sub-block with shift code `shift` (bit 1: first group, bit 0: second).
    auto values_of = [](int shift, int k) { return (k == 0 ? shift < 2 : shift % 2 == 0) ? kIq1P : kIq1M; };
    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        float weight[16];
        iq1_m_weights(xb, qw ? qw + 16 * ib : nullptr, sigma2, weight);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < 16; ++i) max = fmax_ggml(max, std::fabs(xb[i]));
        scales[ib] = 0;
        shifts[ib] = 0;
        if (max < 1e-7f) continue;
        int idx[16];
        sort_indices_by_value<16>(xb, idx);
        // Prefix sums per half of the sub-block (ggml's px / pw), padded for 8-wide loads.
        alignas(32) float px[2][17 + 8], pw[2][17 + 8];
        px[0][0] = px[1][0] = pw[0][0] = pw[1][0] = 0;
        for (int j = 0; j < 16; ++j) {
            const int i = idx[j];
            const int h = i < 8 ? 0 : 1;
            px[h][j + 1] = px[h][j] + weight[i] * xb[i];
            px[1 - h][j + 1] = px[1 - h][j];
            pw[h][j + 1] = pw[h][j] + weight[i];
            pw[1 - h][j + 1] = pw[1 - h][j];
        }
        for (int h = 0; h < 2; ++h)
            for (int j = 17; j < 25; ++j) px[h][j] = pw[h][j] = 0;
        const float txs[2] = {px[0][16], px[1][16]};
        const float tws[2] = {pw[0][16], pw[1][16]};
        const float p2 = kIq1P[2], m2 = kIq1M[2];
        const float cp1 = kIq1P[0] * kIq1P[0] - kIq1P[1] * kIq1P[1];
        const float cp2 = kIq1P[1] * kIq1P[1] - kIq1P[2] * kIq1P[2];
        const float cm1 = kIq1M[0] * kIq1M[0] - kIq1M[1] * kIq1M[1];
        const float cm2 = kIq1M[1] * kIq1M[1] - kIq1M[2] * kIq1M[2];
        CandidateScan scan(-FLT_MAX);
        for (int i1 = 0; i1 <= 16; ++i1) {
            for (int i2 = i1; i2 <= 16; i2 += 8) {
                F8 qx_p[2], qx_m[2], q2_p[2], q2_m[2];
                for (int h = 0; h < 2; ++h) {
                    const F8 sx = splat8(px[h][i1]) + load8(px[h] + i2);
                    qx_p[h] = splat8(txs[h] * p2) - sx;
                    qx_m[h] = splat8(txs[h] * m2) - sx;
                    q2_p[h] = (splat8(tws[h] * p2 * p2) + splat8(pw[h][i1] * cp1)) + load8(pw[h] + i2) * cp2;
                    q2_m[h] = (splat8(tws[h] * m2 * m2) + splat8(pw[h][i1] * cm1)) + load8(pw[h] + i2) * cm2;
                }
                const F8 qx[4] = {qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1], qx_m[0] + qx_m[1]};
                const F8 q2[4] = {q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1], q2_m[0] + q2_m[1]};
                scan.offer8<4>(4 * (17 * i1 + i2), 17 - i2 < 8 ? 17 - i2 : 8, qx, q2);
            }
        }
        if (scan.chosen < 0) continue;
        float scale = scan.scale;
        const int pair = scan.chosen / 4, besti1 = pair / 17, besti2 = pair % 17;
        int best_k = scan.chosen % 4;
        int8_t L[16];
        for (int j = 0; j < 16; ++j) L[idx[j]] = static_cast<int8_t>(j < besti1 ? 0 : j < besti2 ? 1 : 2);
        if (scale < 0) {
            for (int j = 0; j < 16; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
            scale = -scale;
            best_k = 3 - best_k;
        }
        bool all_on_grid = true;
        int index[2];
        for (int k = 0; k < 2; ++k) {
            const int32_t m = map_entry<8>(s, L + 8 * k, 2);
            if (m >= 0) {
                index[k] = m;
            } else {
                all_on_grid = false;
                index[k] = nearest_point<8>(s, list_of(s, m), xb + 8 * k, weight + 8 * k, scale, values_of(best_k, k), L + 8 * k);
            }
        }
        if (!all_on_grid) {
            float sumqx_f = 0, sumq2_f = 0;
            for (int k = 0; k < 2; ++k) {
                const float* xx = values_of(best_k, k);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[s.point_levels[static_cast<size_t>(index[k] * 8 + j)]];
                    sumqx_f += w * q * xb[8 * k + j];
                    sumq2_f += w * q * q;
                }
            }
            if (sumqx_f > 0 && sumq2_f > 0) scale = sumqx_f / sumq2_f;
        }
        y[2 * ib] = static_cast<uint8_t>(index[0] & 255);
        y[2 * ib + 1] = static_cast<uint8_t>(index[1] & 255);
        y[32 + ib] = static_cast<uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = best_k;
        max_scale = fmax_ggml(max_scale, scale);
    }
    if (!max_scale) return;
    float d = max_scale / 15;
    const float id = 1 / d;
    uint16_t sc[4] = {};
    float sumqx_f = 0, sumq2_f = 0;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
        sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << (3 * (ib % 4))));
        y[32 + ib] = static_cast<uint8_t>(y[32 + ib] | masks[shifts[ib]]);
        const float* xb = x + 16 * ib;
        float weight[16];
        iq1_m_weights(xb, qw ? qw + 16 * ib : nullptr, sigma2, weight);
        for (int k = 0; k < 2; ++k) {
            const float* xx = values_of(shifts[ib], k);
            const int point = y[2 * ib + k] + ((y[32 + ib] << (8 - 4 * k)) & 0x700);
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = xx[s.point_levels[static_cast<size_t>(point * 8 + j)]] * static_cast<float>(2 * l + 1);
                sumqx_f += w * q * xb[8 * k + j];
                sumq2_f += w * q * q;
            }
        }
    }
    if (sumq2_f > 0) d = sumqx_f / sumq2_f;
    const uint16_t f16 = kquant::ggml_fp16_bits(d * 1.1125f);
    sc[0] = static_cast<uint16_t>(sc[0] | ((f16 & 0x000f) << 12));
    sc[1] = static_cast<uint16_t>(sc[1] | ((f16 & 0x00f0) << 8));
    sc[2] = static_cast<uint16_t>(sc[2] | ((f16 & 0x0f00) << 4));
    sc[3] = static_cast<uint16_t>(sc[3] | (f16 & 0xf000));
    for (int k = 0; k < 4; ++k) put_u16(y + 48 + 2 * k, sc[k]);
}

// ---- TQ1_0 / TQ2_0 -------------------------------------------------------------------------------

// The trits lroundf(x / amax) + 1 of quantize_row_tq*_0_ref, in element order (0, 1, 2 for -1, 0, +1).
// With an amax whose inverse overflows (all-subnormal blocks) ggml's lroundf gets +-Inf or NaN;
// on x86-64 that converts to LONG_MIN, and LONG_MIN + 1 as an int is 1: the zero trit.
QL_INLINE float ternary_trits(const float* x, uint8_t* t) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) amax = fmax_ggml(amax, std::fabs(x[j]));
    const float id = amax ? 1.0f / amax : 0.0f;
    for (int j = 0; j < QK_K; ++j) {
        const float v = x[j] * id;  // |v| <= 1 when finite: lroundf is the half-away-from-zero rounding
        const int r = (v >= 0.5f) - (v <= -0.5f);
        t[j] = static_cast<uint8_t>(std::isfinite(v) ? r + 1 : 1);
    }
    return amax;
}

QL_INLINE void pack_tq1_0(const uint8_t* t, float d, uint8_t* y) {
    auto ceil_div = [](unsigned q) { return static_cast<uint8_t>((q * 256 + 242) / 243); };
    for (int m = 0; m < 32; ++m) {  // qs[0..31]: elements m + 32 n, n = 0..4
        unsigned q = 0;
        for (int n = 0; n < 5; ++n) q = q * 3 + t[m + 32 * n];
        y[m] = ceil_div(q);
    }
    for (int m = 0; m < 16; ++m) {  // qs[32..47]: elements 160 + m + 16 n
        unsigned q = 0;
        for (int n = 0; n < 5; ++n) q = q * 3 + t[160 + m + 16 * n];
        y[32 + m] = ceil_div(q);
    }
    for (int j = 0; j < 4; ++j) {  // qh[0..3]: elements 240 + j + 4 m, then one zero trit
        unsigned q = 0;
        for (int m = 0; m < 4; ++m) q = q * 3 + t[240 + j + 4 * m];
        y[48 + j] = ceil_div(q * 3);
    }
    store_fp16(y + 52, d);
}

QL_INLINE void pack_tq2_0(const uint8_t* t, float d, uint8_t* y) {
    for (int j = 0; j < 64; j += 32)
        for (int m = 0; m < 32; ++m) {
            unsigned q = 0;
            for (int n = 0; n < 4; ++n) q |= static_cast<unsigned>(t[4 * j + m + 32 * n] & 3) << (2 * n);
            y[j + m] = static_cast<uint8_t>(q);
        }
    store_fp16(y + 64, d);
}

}  // namespace ql::kernels::iquant
