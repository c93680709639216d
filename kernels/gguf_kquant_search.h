// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's K-quant and IQ4 helper searches (ggml-quants.c make_qkx2/qkx3_quants, make_q3_quants,
// make_qx_quants, make_qp_quants, the IQ4 scale search and best_index_int8; spec in
// shared/design/GGUF_KQUANTS.md sections 1, 3 and 8), run on K sub-blocks at once: lane k is
// one sub-block (lane_vector.h), and every lane does exactly ggml's float32 operations in
// ggml's order, so each result is bit for bit ggml's. ggml's loops are sequential sums over one
// sub-block; here one step of K of them is one SIMD operation. Lanes that ggml would leave early
// (degenerate blocks, converged refinement passes) compute on and are masked out: a refinement
// pass that changes nothing changes nothing when repeated.
//
// Layout: "transposed" arrays hold element i of lane k at [i * K + k]. Element codes are kept as
// floats (small integers, exact). Shared by the CPU kernels and the CUDA kernels (QL_HD).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/half_precision.h"
#include "kernels/lane_vector.h"
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

namespace lane_ops {

using namespace ql::kernels::lanes;

// nearest_int on each lane, as a float (the integer is small wherever it is used as a code;
// elsewhere it is converted exactly as ggml converts the int).
template <int K>
QL_HD VI<K> nearest(VF<K> f) {
    const VI<K> r = (bits<K>(f + splat<K>(12582912.0f)) & splat_int<K>(0x007FFFFF)) - splat_int<K>(0x00400000);
    return select<K>(is_nan<K>(f), splat_int<K>(0), r);
}

// MAX(lo, MIN(hi, v)) as a float.
template <int K>
QL_HD VF<K> clamp_code(VI<K> v, int lo, int hi) {
    const VI<K> l = splat_int<K>(lo), h = splat_int<K>(hi);
    return to_float<K>(select<K>(v > l, select<K>(v < h, v, h), l));
}

}  // namespace lane_ops

// The signed element of largest magnitude per lane (ggml: `if (ax > amax) { amax = ax; max = x; }`,
// the first one on ties) and that magnitude.
template <int K, int N>
QL_HD void signed_max_lanes(const float* xt, lanes::VF<K>* amax_out, lanes::VF<K>* max_out) {
    using namespace lane_ops;
    VF<K> amax = splat<K>(0.0f), max = splat<K>(0.0f);
    for (int i = 0; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K), ax = abs<K>(x);
        const VI<K> more = ax > amax;
        amax = select<K>(more, ax, amax);
        max = select<K>(more, x, max);
    }
    *amax_out = amax;
    *max_out = max;
}

// make_qkx2_quants (QKX3 false) / make_qkx3_quants (true) on K lanes of N elements, weights wt
// (transposed like xt). L: the codes 0..nmax (transposed); scale and the_min per lane (the
// sub-block's value is scale * L - the_min). MAD: use_mad.
template <int K, int N, bool QKX3, bool MAD>
QL_HD void make_qkx_lanes(const float* xt, const float* wt, int nmax, float rmin, float rdelta, int nstep, float* L,
                          float* scale_out, float* the_min_out) {
    using namespace lane_ops;
    VF<K> mn = load<K>(xt), mx = mn, sum_w = load<K>(wt), sum_x = sum_w * mn;
    for (int i = 1; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
        mn = select<K>(x < mn, x, mn);
        mx = select<K>(x > mx, x, mx);
        sum_w = sum_w + w;
        sum_x = sum_x + w * x;
    }
    const VF<K> zero = splat<K>(0.0f);
    mn = select<K>(mn > zero, zero, mn);
    const VI<K> live = QKX3 ? ~(mx <= mn) : ~(mx == mn);  // lanes ggml does not leave at once
    const float fnmax = static_cast<float>(nmax);
    VF<K> iscale = splat<K>(fnmax) / (mx - mn);
    VF<K> scale = splat<K>(1.0f) / iscale;
    VF<K> best = zero;
    for (int i = 0; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
        const VF<K> l = clamp_code<K>(nearest<K>(iscale * (x - mn)), 0, nmax);
        store<K>(L + i * K, l);
        VF<K> diff = scale * l + mn - x;
        diff = MAD ? abs<K>(diff) : diff * diff;
        best = best + w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * static_cast<float>(is) + fnmax;
        iscale = splat<K>(num) / (mx - mn);
        VF<K> sum_l = zero, sum_l2 = zero, sum_xl = zero;
        float laux[N * K];
        for (int i = 0; i < N; ++i) {
            const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
            const VF<K> l = clamp_code<K>(nearest<K>(iscale * (x - mn)), 0, nmax);
            store<K>(laux + i * K, l);
            sum_l = sum_l + w * l;
            sum_l2 = sum_l2 + w * l * l;
            sum_xl = sum_xl + w * l * x;
        }
        const VF<K> D = sum_w * sum_l2 - sum_l * sum_l;
        VI<K> take = live & (D > zero);
        if (!any<K>(take)) continue;
        const VF<K> s = (sum_w * sum_xl - sum_x * sum_l) / D;
        const VF<K> m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        const VI<K> positive = m > zero;
        const VF<K> this_min = select<K>(positive, zero, m);
        const VF<K> this_scale = select<K>(positive, sum_xl / sum_l2, s);
        VF<K> cur = zero;
        for (int i = 0; i < N; ++i) {
            const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
            VF<K> diff = this_scale * load<K>(laux + i * K) + this_min - x;
            diff = MAD ? abs<K>(diff) : diff * diff;
            cur = cur + w * diff;
        }
        take = take & (cur < best);
        if (!any<K>(take)) continue;
        best = select<K>(take, cur, best);
        scale = select<K>(take, this_scale, scale);
        mn = select<K>(take, this_min, mn);
        for (int i = 0; i < N; ++i) store<K>(L + i * K, select<K>(take, load<K>(laux + i * K), load<K>(L + i * K)));
    }
    store<K>(scale_out, select<K>(live, scale, zero));
    store<K>(the_min_out, -mn);
    for (int i = 0; i < N; ++i) store<K>(L + i * K, select<K>(live, load<K>(L + i * K), zero));
}

// make_q3_quants(n, nmax, x, L, do_rmse = true) on K lanes: L = l + nmax in 0..2 nmax - 1, or 0
// for a lane of zeros (amax < 1e-15), as ggml leaves it.
template <int K, int N>
QL_HD void make_q3_lanes(const float* xt, int nmax, float* L, float* scale_out) {
    using namespace lane_ops;
    VF<K> amax, max;
    signed_max_lanes<K, N>(xt, &amax, &max);
    const VF<K> zero = splat<K>(0.0f);
    const VF<K> iscale = splat<K>(static_cast<float>(-nmax)) / max;
    VF<K> sumlx = zero, suml2 = zero;
    for (int i = 0; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K);
        const VF<K> l = clamp_code<K>(nearest<K>(iscale * x), -nmax, nmax - 1);
        store<K>(L + i * K, l);
        const VF<K> w = x * x;
        sumlx = sumlx + w * x * l;
        suml2 = suml2 + w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        VI<K> changed = splat_int<K>(0);
        for (int i = 0; i < N; ++i) {
            const VF<K> x = load<K>(xt + i * K), w = x * x, li = load<K>(L + i * K);
            VF<K> slx = sumlx - w * x * li;
            VF<K> sl2 = suml2 - w * li * li;
            const VF<K> nl = clamp_code<K>(nearest<K>(x * sl2 / slx), -nmax, nmax - 1);
            const VI<K> differs = (slx > zero) & (nl != li);
            slx = slx + w * x * nl;
            sl2 = sl2 + w * nl * nl;
            const VI<K> take = differs & (sl2 > zero) & (slx * slx * suml2 > sumlx * sumlx * sl2);
            store<K>(L + i * K, select<K>(take, nl, li));
            sumlx = select<K>(take, slx, sumlx);
            suml2 = select<K>(take, sl2, suml2);
            changed = changed | take;
        }
        if (!any<K>(changed)) break;
    }
    const VI<K> zero_lane = amax < splat<K>(kGroupMaxEps);
    store<K>(scale_out, select<K>(zero_lane, zero, select<K>(suml2 > zero, sumlx / suml2, zero)));
    const VF<K> offset = splat<K>(static_cast<float>(nmax));
    for (int i = 0; i < N; ++i) store<K>(L + i * K, select<K>(zero_lane, zero, load<K>(L + i * K) + offset));
}

// make_qx_quants(n, nmax, x, L, rmse_type = 1, qw) on K lanes; qwt: the weights (transposed),
// or nullptr for x^2. L = l + nmax in 0..2 nmax - 1 (0 for a lane of zeros).
template <int K, int N>
QL_HD void make_qx_lanes(const float* xt, const float* qwt, int nmax, float* L, float* scale_out) {
    using namespace lane_ops;
    VF<K> amax, max;
    signed_max_lanes<K, N>(xt, &amax, &max);
    const VF<K> zero = splat<K>(0.0f), offset = splat<K>(static_cast<float>(nmax));
    VF<K> iscale = splat<K>(static_cast<float>(-nmax)) / max;
    VF<K> sumlx = zero, suml2 = zero;
    for (int i = 0; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K);
        const VF<K> l = clamp_code<K>(nearest<K>(iscale * x), -nmax, nmax - 1);
        store<K>(L + i * K, l + offset);
        const VF<K> w = qwt ? load<K>(qwt + i * K) : x * x;
        sumlx = sumlx + w * x * l;
        suml2 = suml2 + w * l * l;
    }
    VF<K> scale = select<K>(suml2 != zero, sumlx / suml2, zero);
    VF<K> best = scale * sumlx;
    const float fnmax = static_cast<float>(nmax);
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = splat<K>(-(fnmax + 0.1f * static_cast<float>(is))) / max;
        sumlx = suml2 = zero;
        float cand[N * K];
        for (int i = 0; i < N; ++i) {
            const VF<K> x = load<K>(xt + i * K);
            const VF<K> l = clamp_code<K>(nearest<K>(iscale * x), -nmax, nmax - 1);
            store<K>(cand + i * K, l + offset);
            const VF<K> w = qwt ? load<K>(qwt + i * K) : x * x;
            sumlx = sumlx + w * x * l;
            suml2 = suml2 + w * l * l;
        }
        const VI<K> take = (suml2 > zero) & (sumlx * sumlx > best * suml2);
        if (!any<K>(take)) continue;
        scale = select<K>(take, sumlx / suml2, scale);
        best = select<K>(take, scale * sumlx, best);
        for (int i = 0; i < N; ++i) store<K>(L + i * K, select<K>(take, load<K>(cand + i * K), load<K>(L + i * K)));
    }
    const VI<K> zero_lane = amax < splat<K>(kGroupMaxEps);
    store<K>(scale_out, select<K>(zero_lane, zero, scale));
    for (int i = 0; i < N; ++i) store<K>(L + i * K, select<K>(zero_lane, zero, load<K>(L + i * K)));
}

// make_qx_quants(n, nmax, x, L, 1, qw) for one instance (the 16 sub-block scales of a Q3_K
// super-block): L = l + nmax as ints.
template <int N>
QL_HD float make_qx_quants(int nmax, const float* x, int* L, const float* qw) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < N; ++i) {
        const float ax = abs_bits(x[i]);
        max = ax > amax ? x[i] : max;
        amax = ax > amax ? ax : amax;
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < N; ++i) L[i] = 0;
        return 0.0f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < N; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = l + nmax;
        const float fl = static_cast<float>(l);
        sumlx += qw[i] * x[i] * fl;
        suml2 += qw[i] * fl * fl;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < N; ++i) {
            const float fl = static_cast<float>(clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            sumlx += qw[i] * x[i] * fl;
            suml2 += qw[i] * fl * fl;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < N; ++i) L[i] = nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
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

// best_index_int8(16, kvalues_iq4nl, x) [QG] without branches, on K lanes: the binary search ends
// on the last value <= x (lo) and the first > x (hi) and keeps the lower one when x is nearer to
// it. NaN: 15, where the binary search ends. Returns the index and its value.
template <int K>
QL_HD void iq4_best_index_lanes(lanes::VF<K> x, lanes::VF<K>* index, lanes::VF<K>* value) {
    using namespace lane_ops;
    constexpr float k[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    VF<K> ml = splat<K>(0.0f), lo = splat<K>(k[0]), hi = splat<K>(k[15]);
    for (int m = 1; m < 15; ++m) {
        const VI<K> le = splat<K>(k[m]) <= x;
        ml = select<K>(le, splat<K>(static_cast<float>(m)), ml);
        lo = select<K>(le, splat<K>(k[m]), lo);
    }
    for (int m = 14; m >= 1; --m) hi = select<K>(splat<K>(k[m]) > x, splat<K>(k[m]), hi);
    const VI<K> lower = (x - lo) < (hi - x);
    VF<K> idx = select<K>(lower, ml, ml + splat<K>(1.0f));
    VF<K> val = select<K>(lower, lo, hi);
    const VI<K> top = is_nan<K>(x) | (x >= splat<K>(k[15]));
    const VI<K> bottom = x <= splat<K>(k[0]);
    idx = select<K>(top, splat<K>(15.0f), select<K>(bottom, splat<K>(0.0f), idx));
    val = select<K>(top, splat<K>(k[15]), select<K>(bottom, splat<K>(k[0]), val));
    *index = idx;
    *value = val;
}

// The per-block scale search of quantize_row_iq4_nl_impl (ntry = 7) on K lanes of 32 elements:
// scale[k] = the d ggml keeps for the block (0 for a block of zeros).
template <int K>
QL_HD void iq4_scale_lanes(const float* xt, const float* wt, float* scale_out) {
    using namespace lane_ops;
    constexpr int N = 32, ntry = 7;
    VF<K> amax, max;
    signed_max_lanes<K, N>(xt, &amax, &max);
    const VF<K> zero = splat<K>(0.0f);
    VF<K> d = -max / splat<K>(iq4_value(0));
    VF<K> id = splat<K>(1.0f) / d;
    VF<K> sumqx = zero, sumq2 = zero;
    for (int i = 0; i < N; ++i) {
        const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
        VF<K> idx, q;
        iq4_best_index_lanes<K>(id * x, &idx, &q);
        sumqx = sumqx + w * q * x;
        sumq2 = sumq2 + w * q * q;
    }
    d = select<K>(sumq2 > zero, sumqx / sumq2, zero);
    VF<K> best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
        id = splat<K>(static_cast<float>(itry - 127)) / max;  // (itry + values[0]) / max, an int sum
        sumqx = sumq2 = zero;
        for (int i = 0; i < N; ++i) {
            const VF<K> x = load<K>(xt + i * K), w = load<K>(wt + i * K);
            VF<K> idx, q;
            iq4_best_index_lanes<K>(id * x, &idx, &q);
            sumqx = sumqx + w * q * x;
            sumq2 = sumq2 + w * q * q;
        }
        const VI<K> take = (sumq2 > zero) & (sumqx * sumqx > best * sumq2);
        d = select<K>(take, sumqx / sumq2, d);
        best = select<K>(take, d * sumqx, best);
    }
    store<K>(scale_out, select<K>(amax < splat<K>(kGroupMaxEps), zero, d));
}

}  // namespace ql::kernels::kquant
