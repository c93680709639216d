// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's K-quant and IQ4 helper searches (ggml-quants.c make_qkx2/qkx3_quants, make_q3_quants,
// make_qx_quants, make_qp_quants, the IQ4 scale search and best_index_int8; spec in
// shared/design/GGUF_KQUANTS.md sections 1, 3 and 8), run on K sub-blocks at once: lane k is
// one sub-block, and every lane does exactly ggml's float32 operations in ggml's order, so each
// result is bit for bit ggml's. The K lanes of one loop step vectorise (8 or 16 floats), where
// ggml's own loops are sequential sums over one sub-block. Lanes that ggml would leave early
// (degenerate blocks, converged refinement passes) compute on and are masked out: a refinement
// pass that changes nothing changes nothing when repeated.
//
// Layout: "transposed" arrays hold element i of lane k at [i * K + k]. Shared by the CPU
// kernels and the CUDA kernels (QL_HD); loops have constant trip counts.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/half_precision.h"
#include "kernels/portable.h"

namespace ql::kernels::kquant {

constexpr int QK_K = 256;
constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS [Q]

// nearest_int [Q]: round half to even through the float32 bit pattern of f + 1.5 * 2^23 (only
// |f| <= 4194303 round correctly; ggml checks that with an assert that release builds drop, so
// the bit trick is copied as is). A NaN argument gives 0: what x86 does with the NaNs these
// searches make (invalid operations give a NaN with zero low mantissa bits there), spelled out so
// that the CUDA kernels give it too.
QL_HD int nearest_int(float f) {
    const float v = f + 12582912.0f;
    const int r = static_cast<int>(float_bits(v) & 0x007FFFFFu) - 0x00400000;
    return is_nan_bits(f) ? 0 : r;
}

QL_HD int clamp_int(int v, int lo, int hi) { return v > lo ? (v < hi ? v : hi) : lo; }  // MAX(lo, MIN(hi, v))

// GGML_FP32_TO_FP16: round to nearest even, overflow to Inf; NaN keeps its sign with 0x7E00.
QL_HD uint16_t ggml_fp16_bits(float v) {
    return is_nan_bits(v) ? static_cast<uint16_t>(((float_bits(v) >> 16) & 0x8000u) | 0x7E00u) : fp32_to_fp16_bits(v);
}
QL_HD void store_fp16(uint8_t* p, float v) {
    const uint16_t h = ggml_fp16_bits(v);
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}
QL_HD float load_fp16(const uint8_t* p) { return fp16_bits_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// The signed element of largest magnitude per lane (ggml: `if (ax > amax) { amax = ax; max = x; }`,
// the first one on ties) and that magnitude.
template <int K, int N>
QL_HD void signed_max_lanes(const float* xt, float* amax, float* max) {
    for (int k = 0; k < K; ++k) amax[k] = max[k] = 0.0f;
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k], ax = abs_bits(x);
            const bool more = ax > amax[k];
            amax[k] = more ? ax : amax[k];
            max[k] = more ? x : max[k];
        }
}

// make_qkx2_quants (QKX3 false) / make_qkx3_quants (true) on K lanes of N elements, weights wt
// (transposed like xt). L: the codes 0..nmax (transposed); scale and the_min per lane (the
// sub-block's value is scale * L - the_min). MAD: use_mad.
template <int K, int N, bool QKX3, bool MAD>
QL_HD void make_qkx_lanes(const float* xt, const float* wt, int nmax, float rmin, float rdelta, int nstep,
                          uint8_t* L, float* scale_out, float* the_min_out) {
    float mn[K], mx[K], sum_w[K], sum_x[K];
    for (int k = 0; k < K; ++k) {
        mn[k] = mx[k] = xt[k];
        sum_w[k] = wt[k];
        sum_x[k] = sum_w[k] * xt[k];
    }
    for (int i = 1; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k], w = wt[i * K + k];
            mn[k] = x < mn[k] ? x : mn[k];
            mx[k] = x > mx[k] ? x : mx[k];
            sum_w[k] += w;
            sum_x[k] += w * x;
        }
    bool degenerate[K];
    float iscale[K], scale[K], best[K];
    const float fnmax = static_cast<float>(nmax);
    for (int k = 0; k < K; ++k) {
        mn[k] = mn[k] > 0.0f ? 0.0f : mn[k];
        degenerate[k] = QKX3 ? (mx[k] <= mn[k]) : (mx[k] == mn[k]);
        iscale[k] = fnmax / (mx[k] - mn[k]);
        scale[k] = 1.0f / iscale[k];
        best[k] = 0.0f;
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k], w = wt[i * K + k];
            const int l = clamp_int(nearest_int(iscale[k] * (x - mn[k])), 0, nmax);
            L[i * K + k] = static_cast<uint8_t>(l);
            float diff = scale[k] * static_cast<float>(l) + mn[k] - x;
            diff = MAD ? abs_bits(diff) : diff * diff;
            best[k] += w * diff;
        }
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * static_cast<float>(is) + fnmax;
        float sum_l[K], sum_l2[K], sum_xl[K];
        uint8_t laux[N * K];
        for (int k = 0; k < K; ++k) {
            iscale[k] = num / (mx[k] - mn[k]);
            sum_l[k] = sum_l2[k] = sum_xl[k] = 0.0f;
        }
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) {
                const float x = xt[i * K + k], w = wt[i * K + k];
                const int l = clamp_int(nearest_int(iscale[k] * (x - mn[k])), 0, nmax);
                laux[i * K + k] = static_cast<uint8_t>(l);
                const float fl = static_cast<float>(l);
                sum_l[k] += w * fl;
                sum_l2[k] += w * fl * fl;
                sum_xl[k] += w * fl * x;
            }
        float this_scale[K], this_min[K], cur[K];
        bool take[K];
        bool any = false;
        for (int k = 0; k < K; ++k) {
            const float D = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
            const float s = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / D;
            const float m = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / D;
            const bool positive = m > 0.0f;
            this_min[k] = positive ? 0.0f : m;
            this_scale[k] = positive ? sum_xl[k] / sum_l2[k] : s;
            cur[k] = 0.0f;
            take[k] = !degenerate[k] && D > 0.0f;
            any = any || take[k];
        }
        if (!any) continue;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) {
                const float x = xt[i * K + k], w = wt[i * K + k];
                float diff = this_scale[k] * static_cast<float>(laux[i * K + k]) + this_min[k] - x;
                diff = MAD ? abs_bits(diff) : diff * diff;
                cur[k] += w * diff;
            }
        for (int k = 0; k < K; ++k) {
            take[k] = take[k] && cur[k] < best[k];
            best[k] = take[k] ? cur[k] : best[k];
            scale[k] = take[k] ? this_scale[k] : scale[k];
            mn[k] = take[k] ? this_min[k] : mn[k];
        }
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) L[i * K + k] = take[k] ? laux[i * K + k] : L[i * K + k];
    }
    for (int k = 0; k < K; ++k) {
        scale_out[k] = degenerate[k] ? 0.0f : scale[k];
        the_min_out[k] = -mn[k];
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) L[i * K + k] = degenerate[k] ? uint8_t{0} : L[i * K + k];
}

// make_q3_quants(n, nmax, x, L, do_rmse = true) on K lanes: L = l + nmax in 0..2 nmax - 1, or 0
// for a lane of zeros (amax < 1e-15), as ggml leaves it.
template <int K, int N>
QL_HD void make_q3_lanes(const float* xt, int nmax, int8_t* L, float* scale_out) {
    float amax[K], max[K], iscale[K], sumlx[K], suml2[K];
    signed_max_lanes<K, N>(xt, amax, max);
    for (int k = 0; k < K; ++k) {
        iscale[k] = static_cast<float>(-nmax) / max[k];
        sumlx[k] = suml2[k] = 0.0f;
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k];
            const int l = clamp_int(nearest_int(iscale[k] * x), -nmax, nmax - 1);
            L[i * K + k] = static_cast<int8_t>(l);
            const float w = x * x, fl = static_cast<float>(l);
            sumlx[k] += w * x * fl;
            suml2[k] += w * fl * fl;
        }
    for (int itry = 0; itry < 5; ++itry) {
        bool changed = false;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) {
                const float x = xt[i * K + k], w = x * x;
                const int li = L[i * K + k];
                const float fli = static_cast<float>(li);
                float slx = sumlx[k] - w * x * fli;
                float sl2 = suml2[k] - w * fli * fli;
                const int nl = clamp_int(nearest_int(x * sl2 / slx), -nmax, nmax - 1);
                const float fnl = static_cast<float>(nl);
                const bool differs = slx > 0.0f && nl != li;
                slx += w * x * fnl;
                sl2 += w * fnl * fnl;
                const bool take = differs && sl2 > 0.0f && slx * slx * suml2[k] > sumlx[k] * sumlx[k] * sl2;
                L[i * K + k] = static_cast<int8_t>(take ? nl : li);
                sumlx[k] = take ? slx : sumlx[k];
                suml2[k] = take ? sl2 : suml2[k];
                changed = changed || take;
            }
        if (!changed) break;
    }
    for (int k = 0; k < K; ++k) {
        const bool zero = amax[k] < kGroupMaxEps;
        scale_out[k] = zero ? 0.0f : (suml2[k] > 0.0f ? sumlx[k] / suml2[k] : 0.0f);
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k)
            L[i * K + k] = static_cast<int8_t>(amax[k] < kGroupMaxEps ? 0 : L[i * K + k] + nmax);
}

// make_qx_quants(n, nmax, x, L, rmse_type = 1, qw) on K lanes; qwt: the weights (transposed),
// or nullptr for x^2. L = l + nmax in 0..2 nmax - 1 (0 for a lane of zeros).
template <int K, int N>
QL_HD void make_qx_lanes(const float* xt, const float* qwt, int nmax, int8_t* L, float* scale_out) {
    float amax[K], max[K], iscale[K], sumlx[K], suml2[K], scale[K], best[K];
    signed_max_lanes<K, N>(xt, amax, max);
    for (int k = 0; k < K; ++k) {
        iscale[k] = static_cast<float>(-nmax) / max[k];
        sumlx[k] = suml2[k] = 0.0f;
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k];
            const int l = clamp_int(nearest_int(iscale[k] * x), -nmax, nmax - 1);
            L[i * K + k] = static_cast<int8_t>(l + nmax);
            const float w = qwt ? qwt[i * K + k] : x * x, fl = static_cast<float>(l);
            sumlx[k] += w * x * fl;
            suml2[k] += w * fl * fl;
        }
    for (int k = 0; k < K; ++k) {
        scale[k] = suml2[k] != 0.0f ? sumlx[k] / suml2[k] : 0.0f;
        best[k] = scale[k] * sumlx[k];
    }
    const float fnmax = static_cast<float>(nmax);
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const float num = -(fnmax + 0.1f * static_cast<float>(is));
        int8_t cand[N * K];
        for (int k = 0; k < K; ++k) {
            iscale[k] = num / max[k];
            sumlx[k] = suml2[k] = 0.0f;
        }
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) {
                const float x = xt[i * K + k];
                const int l = clamp_int(nearest_int(iscale[k] * x), -nmax, nmax - 1);
                cand[i * K + k] = static_cast<int8_t>(l + nmax);
                const float w = qwt ? qwt[i * K + k] : x * x, fl = static_cast<float>(l);
                sumlx[k] += w * x * fl;
                suml2[k] += w * fl * fl;
            }
        bool take[K];
        for (int k = 0; k < K; ++k) {
            take[k] = suml2[k] > 0.0f && sumlx[k] * sumlx[k] > best[k] * suml2[k];
            scale[k] = take[k] ? sumlx[k] / suml2[k] : scale[k];
            best[k] = take[k] ? scale[k] * sumlx[k] : best[k];
        }
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) L[i * K + k] = take[k] ? cand[i * K + k] : L[i * K + k];
    }
    for (int k = 0; k < K; ++k) scale_out[k] = amax[k] < kGroupMaxEps ? 0.0f : scale[k];
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) L[i * K + k] = amax[k] < kGroupMaxEps ? int8_t{0} : L[i * K + k];
}

// make_qp_quants(n, nmax, x >= 0, L, quant_weights): one instance (the sub-block scales or mins
// of a super-block).
template <int N>
QL_HD float make_qp_quants(int nmax, const float* x, uint8_t* L, const float* w) {
    float max = 0.0f;
    for (int i = 0; i < N; ++i) max = max > x[i] ? max : x[i];  // MAX(max, x[i])
    if (max < kGroupMaxEps) {
        for (int i = 0; i < N; ++i) L[i] = 0;
        return 0.0f;
    }
    const float fnmax = static_cast<float>(nmax);
    float iscale = fnmax / max;
    float best_mse = 0.0f;
    {
        const float scale = 1.0f / iscale;
        for (int i = 0; i < N; ++i) {
            const float diff = x[i] - scale * static_cast<float>(static_cast<uint8_t>(nearest_int(iscale * x[i])));
            best_mse += w[i] * diff * diff;
        }
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * static_cast<float>(is) + fnmax) / max;
        const float scale_is = 1.0f / iscale_is;
        float mse = 0.0f;
        for (int i = 0; i < N; ++i) {
            int l = nearest_int(iscale_is * x[i]);
            l = nmax < l ? nmax : l;
            const float diff = x[i] - scale_is * static_cast<float>(l);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < N; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = nmax < l ? nmax : l;
        L[i] = static_cast<uint8_t>(l);
        const float fl = static_cast<float>(l);
        sumlx += w[i] * x[i] * fl;
        suml2 += w[i] * fl * fl;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < N; ++i) {
            const float fli = static_cast<float>(L[i]);
            float slx = sumlx - w[i] * x[i] * fli;
            float sl2 = suml2 - w[i] * fli * fli;
            if (slx > 0.0f && sl2 > 0.0f) {
                int nl = nearest_int(x[i] * sl2 / slx);
                nl = nmax < nl ? nmax : nl;
                if (nl != L[i]) {
                    const float fnl = static_cast<float>(nl);
                    slx += w[i] * x[i] * fnl;
                    sl2 += w[i] * fnl * fnl;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(nl);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ---- IQ4 (non-linear 4-bit) -----------------------------------------------------------------

// kvalues_iq4nl [H]
QL_HD float iq4_value(int i) {
    constexpr float k[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return k[i];
}

// best_index_int8(16, kvalues_iq4nl, x) [QG] without branches: the binary search ends on the last
// value <= x (lo) and the first > x (hi) and keeps the lower one when x is nearer to it. NaN: 15,
// where the binary search ends.
QL_HD int iq4_best_index(float x) {
    constexpr float k[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    int ml = 0;
    float lo = k[0], hi = k[15];
    for (int m = 1; m < 15; ++m) {
        const bool le = k[m] <= x;
        ml += le ? 1 : 0;
        lo = le ? k[m] : lo;
    }
    for (int m = 14; m >= 1; --m) hi = k[m] > x ? k[m] : hi;
    const int inner = (x - lo < hi - x) ? ml : ml + 1;
    return is_nan_bits(x) ? 15 : (x <= k[0] ? 0 : (x >= k[15] ? 15 : inner));
}

// The per-block scale search of quantize_row_iq4_nl_impl (ntry = 7) on K lanes of 32 elements:
// scale[k] = the d ggml keeps for the block (0 for a block of zeros).
template <int K>
QL_HD void iq4_scale_lanes(const float* xt, const float* wt, float* scale_out) {
    constexpr int N = 32, ntry = 7;
    float amax[K], max[K], d[K], best[K], sumqx[K], sumq2[K], id[K];
    signed_max_lanes<K, N>(xt, amax, max);
    for (int k = 0; k < K; ++k) {
        d[k] = -max[k] / iq4_value(0);
        id[k] = 1.0f / d[k];
        sumqx[k] = sumq2[k] = 0.0f;
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[i * K + k], w = wt[i * K + k];
            const float q = iq4_value(iq4_best_index(id[k] * x));
            sumqx[k] += w * q * x;
            sumq2[k] += w * q * q;
        }
    for (int k = 0; k < K; ++k) {
        d[k] = sumq2[k] > 0.0f ? sumqx[k] / sumq2[k] : 0.0f;
        best[k] = d[k] * sumqx[k];
    }
    for (int itry = -ntry; itry <= ntry; ++itry) {
        const float num = static_cast<float>(itry - 127);  // itry + values[0], an int
        for (int k = 0; k < K; ++k) {
            id[k] = num / max[k];
            sumqx[k] = sumq2[k] = 0.0f;
        }
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) {
                const float x = xt[i * K + k], w = wt[i * K + k];
                const float q = iq4_value(iq4_best_index(id[k] * x));
                sumqx[k] += w * q * x;
                sumq2[k] += w * q * q;
            }
        for (int k = 0; k < K; ++k) {
            const bool take = sumq2[k] > 0.0f && sumqx[k] * sumqx[k] > best[k] * sumq2[k];
            d[k] = take ? sumqx[k] / sumq2[k] : d[k];
            best[k] = take ? d[k] * sumqx[k] : best[k];
        }
    }
    for (int k = 0; k < K; ++k) scale_out[k] = amax[k] < kGroupMaxEps ? 0.0f : d[k];
}

}  // namespace ql::kernels::kquant
