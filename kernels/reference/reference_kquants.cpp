// SPDX-License-Identifier: GPL-3.0-or-later
// Transcribed line by line from ggml-quants.c (llama-cpp-python 0.3.36's llama.cpp); the names
// are ggml's. Compiled with -ffp-contract=off, so every float op rounds on its own, as in
// ggml-base (which gets no FMA flags).
#include "kernels/reference/reference_kquants.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/reference/reference_ggml.h"

namespace ql::kernels::reference {
namespace ggml_ref {  // shared with reference_iquants.cpp: reference_ggml.h

constexpr int QK_K = 256;
constexpr float GROUP_MAX_EPS = 1e-15f;

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// ggml's nearest_int. On x86 a NaN argument (in these searches always a NaN made by an invalid
// operation, whose low mantissa bits are zero there) comes out as 0: spelled out, so that the
// transcription does not depend on the machine's NaN payloads.
int nearest_int(float fval) {
    if (std::isnan(fval)) return 0;
    const float val = fval + 12582912.f;
    int i;
    std::memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

// ggml_compute_fp32_to_fp16 (ggml-impl.h), the software routine ggml-base uses.
uint16_t fp32_to_fp16(float f) {
    const float scale_to_inf = 0x1.0p+112f;
    const float scale_to_zero = 0x1.0p-110f;
    float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
    const uint32_t w = bits_of(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & UINT32_C(0x80000000);
    uint32_t bias = shl1_w & UINT32_C(0xFF000000);
    if (bias < UINT32_C(0x71000000)) bias = UINT32_C(0x71000000);
    base = float_of((bias >> 1) + UINT32_C(0x07800000)) + base;
    const uint32_t bits = bits_of(base);
    const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
    const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return static_cast<uint16_t>((sign >> 16) | (shl1_w > UINT32_C(0xFF000000) ? UINT16_C(0x7E00) : nonsign));
}

// ggml_compute_fp16_to_fp32: exact.
float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = (h >> 15) & 1u, e = (h >> 10) & 31u, m = h & 1023u;
    float v;
    if (e == 0)
        v = std::ldexp(static_cast<float>(m), -24);
    else if (e == 31)
        v = m ? std::nanf("") : INFINITY;
    else
        v = std::ldexp(static_cast<float>(m | 1024u), static_cast<int>(e) - 25);
    return sign ? -v : v;
}

void put_fp16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}
float get_fp16(const uint8_t* p) { return fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

}  // namespace ggml_ref
namespace {
using namespace ggml_ref;

// ---- helpers (ggml-quants.c "Helper functions") ----------------------------------------------

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    if (rmse_type != 1) throw std::logic_error("make_qx_quants: only rmse_type 1 is used by the K-quants");
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MAX(-nmax, MIN(nmax - 1, l));
        L[i] = static_cast<int8_t>(l + nmax);
        float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = MAX(-nmax, MIN(nmax - 1, l));
            float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + MAX(-nmax, MIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {  // do_rmse = true
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MAX(-nmax, MIN(nmax - 1, l));
        L[i] = static_cast<int8_t>(l);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = MAX(-nmax, MIN(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<int8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// make_qkx2_quants (qkx3 = false) and make_qkx3_quants (qkx3 = true); the two differ only in
// the degenerate-block test (max == min vs max <= min).
float make_qkx_quants(bool qkx3, int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                      uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (qkx3 ? (max <= min) : (max == min)) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(MAX(0, MIN(nmax, l)));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        float w = weights[i];
        best_error += w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = MAX(0, MIN(nmax, l));
            Laux[i] = static_cast<uint8_t>(l);
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

}  // namespace
namespace ggml_ref {

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = MAX(max, x[i]);
    if (max < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
    float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        float diff = x[i] - scale * L[i];
        float w = quant_weights[i];
        best_mse += w * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        float iscale_is = (0.1f * is + nmax) / max;
        float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale_is * x[i]);
            l = MIN(nmax, l);
            float diff = x[i] - scale_is * l;
            float w = quant_weights[i];
            mse += w * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MIN(nmax, l);
        L[i] = static_cast<uint8_t>(l);
        float w = quant_weights[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            float w = quant_weights[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = MIN(nmax, new_l);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(new_l);
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

}  // namespace ggml_ref
namespace {

void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

// The 8 packed 6-bit (scale, min) pairs of Q4_K / Q5_K.
void put_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
    } else {
        scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        scales[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
}

const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

int best_index_int8(int n, const int8_t* val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

// ---- block layouts -------------------------------------------------------------------------

// Q2_K 84 B: scales[16] @0, qs[64] @16, d @80, dmin @82.
// Q3_K 110 B: hmask[32] @0, qs[64] @32, scales[12] @96, d @108.
// Q4_K 144 B: d @0, dmin @2, scales[12] @4, qs[128] @16.
// Q5_K 176 B: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48.
// Q6_K 210 B: ql[128] @0, qh[64] @128, scales[16] @192, d @208.
// IQ4_NL 18 B: d @0, qs[16] @2.   IQ4_XS 136 B: d @0, scales_h @2, scales_l[4] @4, qs[128] @8.

void pack_2bit(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// ---- quantizers --------------------------------------------------------------------------------

void quantize_row_q2_K_ref(const float* x, uint8_t* y) {
    uint8_t L[QK_K];
    uint8_t Laux[16];
    float weights[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    const float q4scale = 15.f;
    uint8_t* ysc = y;
    uint8_t* qs = y + 16;
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx_quants(false, 16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        float min = mins[j];
        if (min > max_min) max_min = min;
    }
    if (max_scale > 0) {
        float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int l = nearest_int(iscale * scales[j]);
            ysc[j] = static_cast<uint8_t>(l);
        }
        put_fp16(y + 80, max_scale / q4scale);
    } else {
        for (int j = 0; j < QK_K / 16; ++j) ysc[j] = 0;
        put_fp16(y + 80, 0.f);
    }
    if (max_min > 0) {
        float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; ++j) {
            int l = nearest_int(iscale * mins[j]);
            ysc[j] = static_cast<uint8_t>(ysc[j] | (l << 4));
        }
        put_fp16(y + 82, max_min / q4scale);
    } else {
        put_fp16(y + 82, 0.f);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = get_fp16(y + 80) * (ysc[j] & 0xF);
        if (!d) continue;
        const float dm = get_fp16(y + 82) * (ysc[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int((x[16 * j + ii] + dm) / d);
            l = MAX(0, MIN(3, l));
            L[16 * j + ii] = static_cast<uint8_t>(l);
        }
    }
    pack_2bit(L, qs);
}

void quantize_row_q2_K_impl(const float* x, uint8_t* y, const float* quant_weights) {
    uint8_t L[QK_K];
    uint8_t Laux[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    float sw[QK_K / 16];
    float weight[16];
    uint8_t Ls[QK_K / 16], Lm[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) sw[j] = 0;
    float sumx2 = 0;
    for (int j = 0; j < QK_K; ++j) sumx2 += x[j] * x[j];
    float sigma2 = sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qw = quant_weights + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        for (int l = 0; l < QK_K / 16; ++l) sw[j] += weight[l];
        scales[j] = make_qkx_quants(true, 16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    put_fp16(y + 80, dm);
    put_fp16(y + 82, mm);
    dm = get_fp16(y + 80);
    mm = get_fp16(y + 82);
    for (int j = 0; j < QK_K / 16; ++j) y[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = dm * (y[j] & 0xF);
        if (!d) continue;
        const float m = mm * (y[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int((x[16 * j + ii] + m) / d);
            l = MAX(0, MIN(3, l));
            L[16 * j + ii] = static_cast<uint8_t>(l);
        }
    }
    pack_2bit(L, y + 16);
}

// The 16 signed 6-bit Q3_K scales (stored + 32) into 12 bytes.
void put_q3_scales(const int* ls, uint8_t* scales) {
    std::memset(scales, 0, 12);
    for (int j = 0; j < QK_K / 16; ++j) {
        int l = ls[j];
        if (j < 8)
            scales[j] = static_cast<uint8_t>(l & 0xF);
        else
            scales[j - 8] = static_cast<uint8_t>(scales[j - 8] | ((l & 0xF) << 4));
        l >>= 4;
        scales[j % 4 + 8] = static_cast<uint8_t>(scales[j % 4 + 8] | (l << (2 * (j / 4))));
    }
}

int get_q3_scale(int j, const uint8_t* scales) {
    int8_t sc = static_cast<int8_t>(j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    return sc;
}

// Requantization and packing shared by both Q3_K paths.
void finish_q3_K(const float* x, int8_t* L, uint8_t* y) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const int sc = get_q3_scale(j, y + 96);
        float d = get_fp16(y + 108) * sc;
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = MAX(-4, MIN(3, l));
            L[16 * j + ii] = static_cast<int8_t>(l + 4);
        }
    }
    uint8_t* hmask = y;
    std::memset(hmask, 0, QK_K / 8);
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < QK_K; ++j) {
        if (L[j] > 3) {
            hmask[m] |= hm;
            L[j] = static_cast<int8_t>(L[j] - 4);
        }
        if (++m == QK_K / 8) {
            m = 0;
            hm = static_cast<uint8_t>(hm << 1);
        }
    }
    uint8_t UL[QK_K];
    for (int j = 0; j < QK_K; ++j) UL[j] = static_cast<uint8_t>(L[j]);
    pack_2bit(UL, y + 32);
}

void quantize_row_q3_K_ref(const float* x, uint8_t* y) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        float scale = std::fabs(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    int ls[QK_K / 16] = {};
    if (max_scale) {
        float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
            ls[j] = static_cast<int8_t>(MAX(-32, MIN(31, static_cast<int>(l))) + 32);
        }
        put_q3_scales(ls, y + 96);
        put_fp16(y + 108, 1 / iscale);
    } else {
        std::memset(y + 96, 0, 12);
        put_fp16(y + 108, 0.f);
    }
    finish_q3_K(x, L, y);
}

void quantize_row_q3_K_impl(const float* x, uint8_t* y, const float* quant_weights) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float weight[16];
    float sw[QK_K / 16];
    int8_t Ls[QK_K / 16];
    float sumx2 = 0;
    for (int j = 0; j < QK_K; ++j) sumx2 += x[j] * x[j];
    float sigma2 = 2 * sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        const float* qw = quant_weights + 16 * j;
        for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 16; ++l) sumw += weight[l];
        sw[j] = sumw;
        scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }
    float d_block = make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
    int ls[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) ls[j] = Ls[j];
    put_q3_scales(ls, y + 96);
    put_fp16(y + 108, d_block);
    finish_q3_K(x, L, y);
}

// Requantization and packing shared by Q4_K and Q5_K, both paths (nmax 15 or 31).
void finish_q45_K(const float* x, uint8_t* L, uint8_t* y, int nmax) {
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, y + 4, &sc, &m);
        const float d = get_fp16(y) * sc;
        if (!d) continue;
        const float dm = get_fp16(y + 2) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            l = MAX(0, MIN(nmax, l));
            L[32 * j + ii] = static_cast<uint8_t>(l);
        }
    }
    if (nmax == 15) {
        uint8_t* q = y + 16;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
            q += 32;
        }
        return;
    }
    uint8_t* qh = y + 16;
    uint8_t* ql = y + 48;
    std::memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
        }
        m1 = static_cast<uint8_t>(m1 << 2);
        m2 = static_cast<uint8_t>(m2 << 2);
        ql += 32;
    }
}

void quantize_row_q45_K_ref(const float* x, uint8_t* y, int nmax) {
    uint8_t L[QK_K];
    uint8_t Laux[32];
    float weights[32];
    float mins[QK_K / 32];
    float scales[QK_K / 32];
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = nmax == 15
                        ? make_qkx_quants(false, 32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -1.f, 0.1f, 20, false)
                        : make_qkx_quants(false, 32, 31, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.5f, 0.1f, 15, false);
        float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        float min = mins[j];
        if (min > max_min) max_min = min;
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(y + 4, 0, 12);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
        uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
        ls = MIN<uint8_t>(63, ls);
        lm = MIN<uint8_t>(63, lm);
        put_scale_min_k4(j, ls, lm, y + 4);
    }
    put_fp16(y, max_scale / 63.f);
    put_fp16(y + 2, max_min / 63.f);
    finish_q45_K(x, L, y, nmax);
}

void quantize_row_q45_K_impl(const float* x, uint8_t* y, const float* quant_weights, int nmax) {
    uint8_t L[QK_K];
    uint8_t Laux[32];
    uint8_t Ls[QK_K / 32];
    uint8_t Lm[QK_K / 32];
    float weights[32];
    float sw[QK_K / 32];
    float mins[QK_K / 32];
    float scales[QK_K / 32];
    float sum_x2 = 0;
    for (int l = 0; l < QK_K; ++l) sum_x2 += x[l] * x[l];
    float sigma2 = 2 * sum_x2 / QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float* qw = quant_weights + 32 * j;
        for (int l = 0; l < 32; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 32; ++l) sumw += weights[l];
        sw[j] = sumw;
        scales[j] = make_qkx_quants(true, 32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    std::memset(y + 4, 0, 12);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = Ls[j];
        uint8_t lm = Lm[j];
        if (nmax == 31) {  // quantize_row_q5_K_impl clamps, q4_K's does not
            ls = MIN<uint8_t>(63, ls);
            lm = MIN<uint8_t>(63, lm);
        }
        put_scale_min_k4(j, ls, lm, y + 4);
    }
    put_fp16(y, d_block);
    put_fp16(y + 2, m_block);
    finish_q45_K(x, L, y, nmax);
}

void quantize_row_q6_K(const float* x, uint8_t* y, const float* quant_weights) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, quant_weights ? quant_weights + 16 * ib : nullptr);
        scales[ib] = scale;
        const float abs_scale = std::fabs(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        std::memset(y, 0, 210);
        return;
    }
    float iscale = -128.f / max_scale;
    put_fp16(y + 208, 1 / iscale);
    int8_t* ysc = reinterpret_cast<int8_t*>(y + 192);
    for (int ib = 0; ib < QK_K / 16; ++ib) ysc[ib] = static_cast<int8_t>(MIN(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < QK_K / 16; ++j) {
        float d = get_fp16(y + 208) * ysc[j];
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = MAX(-32, MIN(31, l));
            L[16 * j + ii] = static_cast<int8_t>(l + 32);
        }
    }
    uint8_t* ql = y;
    uint8_t* qh = y + 128;
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF;
            const uint8_t q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF;
            const uint8_t q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
            ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
            qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                         ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

// quantize_row_iq4_nl_impl with ntry = 7 (what quantize_iq4_nl and quantize_iq4_xs pass).
// L is the caller's scratch array, as in ggml (IQ4_NL keeps it across blocks).
void quantize_row_iq4_nl_impl(int super_block_size, int block_size, const float* x, uint8_t* dh, uint8_t* q4,
                              uint8_t* scales_h, uint8_t* scales_l, float* scales, float* weight, uint8_t* L,
                              const int8_t* values, const float* quant_weights, int ntry) {
    float sigma2 = 0;
    for (int j = 0; j < super_block_size; ++j) sigma2 += x[j] * x[j];
    sigma2 *= 2.f / super_block_size;
    std::memset(q4, 0, super_block_size / 2);
    put_fp16(dh, 0.f);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < super_block_size / block_size; ++ib) {
        const float* xb = x + ib * block_size;
        uint8_t* Lb = L + ib * block_size;
        if (quant_weights) {
            const float* qw = quant_weights + ib * block_size;
            for (int j = 0; j < block_size; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
        } else {
            for (int j = 0; j < block_size; ++j) weight[j] = xb[j] * xb[j];
        }
        float amax = 0, max = 0;
        for (int j = 0; j < block_size; ++j) {
            float ax = std::fabs(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < block_size; ++j) {
            float al = id * xb[j];
            int l = best_index_int8(16, values, al);
            Lb[j] = static_cast<uint8_t>(l);
            float q = values[l];
            float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < block_size; ++j) {
                float al = id * xb[j];
                int l = best_index_int8(16, values, al);
                float q = values[l];
                float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        float abs_d = std::fabs(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if (super_block_size / block_size > 1) {
        uint16_t sh = 0;
        float d = -max_scale / 32;
        put_fp16(dh, d);
        float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < super_block_size / block_size; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = MAX(-32, MIN(31, l));
            float dl = d * l;
            float idl = dl ? 1 / dl : 0.f;
            uint8_t* Lb = L + ib * block_size;
            const float* xb = x + ib * block_size;
            for (int j = 0; j < block_size; ++j) Lb[j] = static_cast<uint8_t>(best_index_int8(16, values, idl * xb[j]));
            l += 32;
            uint8_t l_l = l & 0xf;
            uint8_t l_h = static_cast<uint8_t>(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | (l_l << 4));
            sh = static_cast<uint16_t>(sh | (l_h << 2 * (ib % 8)));
        }
        scales_h[0] = static_cast<uint8_t>(sh & 0xFF);
        scales_h[1] = static_cast<uint8_t>(sh >> 8);
    } else {
        put_fp16(dh, scales[0]);
        if (ntry > 0) {
            float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < super_block_size; ++j) L[j] = static_cast<uint8_t>(best_index_int8(16, values, id * x[j]));
        }
    }
    for (int i = 0; i < super_block_size / 32; ++i)
        for (int j = 0; j < 16; ++j) q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

}  // namespace

int64_t kquant_block_elements(KQuant t) { return t == KQuant::IQ4_NL ? 32 : QK_K; }

int64_t kquant_block_bytes(KQuant t) {
    switch (t) {
        case KQuant::Q2_K: return 84;
        case KQuant::Q3_K: return 110;
        case KQuant::Q4_K: return 144;
        case KQuant::Q5_K: return 176;
        case KQuant::Q6_K: return 210;
        case KQuant::IQ4_NL: return 18;
        case KQuant::IQ4_XS: return 136;
    }
    return 0;
}

std::vector<uint8_t> kquant_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, KQuant t,
                                     const std::vector<float>& importance) {
    const int64_t be = kquant_block_elements(t), bb = kquant_block_bytes(t);
    if (cols % be != 0) throw std::invalid_argument("kquant_quantize: cols must be a multiple of the block");
    if (!importance.empty() && static_cast<int64_t>(importance.size()) != cols)
        throw std::invalid_argument("kquant_quantize: importance must hold one value per column");
    const float* qw_row = importance.empty() ? nullptr : importance.data();
    const int64_t nb = cols / be;
    std::vector<uint8_t> out(static_cast<size_t>(rows * nb * bb));
    uint8_t L[QK_K] = {};  // IQ4's scratch: ggml's lives across the blocks of one call
    float weight[QK_K], scales[QK_K / 32];
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < nb; ++b) {
            const float* xb = x.data() + r * cols + b * be;
            const float* qw = qw_row ? qw_row + b * be : nullptr;
            uint8_t* y = out.data() + (r * nb + b) * bb;
            switch (t) {
                case KQuant::Q2_K: qw ? quantize_row_q2_K_impl(xb, y, qw) : quantize_row_q2_K_ref(xb, y); break;
                case KQuant::Q3_K: qw ? quantize_row_q3_K_impl(xb, y, qw) : quantize_row_q3_K_ref(xb, y); break;
                case KQuant::Q4_K: qw ? quantize_row_q45_K_impl(xb, y, qw, 15) : quantize_row_q45_K_ref(xb, y, 15); break;
                case KQuant::Q5_K: qw ? quantize_row_q45_K_impl(xb, y, qw, 31) : quantize_row_q45_K_ref(xb, y, 31); break;
                case KQuant::Q6_K: quantize_row_q6_K(xb, y, qw); break;
                case KQuant::IQ4_NL: {
                    uint8_t unused_h[2];
                    quantize_row_iq4_nl_impl(32, 32, xb, y, y + 2, unused_h, nullptr, scales, weight, L, kvalues_iq4nl, qw, 7);
                    break;
                }
                case KQuant::IQ4_XS:
                    quantize_row_iq4_nl_impl(QK_K, 32, xb, y, y + 8, y + 2, y + 4, scales, weight, L, kvalues_iq4nl, qw, 7);
                    break;
            }
        }
    }
    return out;
}

std::vector<float> kquant_dequantize(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, KQuant t) {
    const int64_t be = kquant_block_elements(t), bb = kquant_block_bytes(t);
    const int64_t nblocks = rows * (cols / be);
    std::vector<float> out(static_cast<size_t>(rows * cols));
    for (int64_t b = 0; b < nblocks; ++b) {
        const uint8_t* x = bytes.data() + b * bb;
        float* y = out.data() + b * be;
        switch (t) {
            case KQuant::Q2_K: {  // dequantize_row_q2_K
                const float d = get_fp16(x + 80), min = get_fp16(x + 82);
                const uint8_t* q = x + 16;
                int is = 0;
                for (int n = 0; n < QK_K; n += 128) {
                    int shift = 0;
                    for (int j = 0; j < 4; ++j) {
                        uint8_t sc = x[is++];
                        float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<int8_t>((q[l] >> shift) & 3) - ml;
                        sc = x[is++];
                        dl = d * (sc & 0xF);
                        ml = min * (sc >> 4);
                        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<int8_t>((q[l + 16] >> shift) & 3) - ml;
                        shift += 2;
                    }
                    q += 32;
                }
                break;
            }
            case KQuant::Q3_K: {  // dequantize_row_q3_K, scales unpacked one by one
                const float d_all = get_fp16(x + 108);
                for (int e = 0; e < QK_K; ++e) {
                    const int h = e / 128, r = e % 128;
                    const int low = (x[32 + 32 * h + r % 32] >> (2 * (r / 32))) & 3;
                    const bool hbit = (x[e % 32] >> (e / 32)) & 1;
                    const float dl = d_all * get_q3_scale(e / 16, x + 96);
                    y[e] = dl * (low - (hbit ? 0 : 4));
                }
                break;
            }
            case KQuant::Q4_K:
            case KQuant::Q5_K: {  // dequantize_row_q4_K / q5_K
                const bool five = t == KQuant::Q5_K;
                const float d = get_fp16(x), min = get_fp16(x + 2);
                const uint8_t* ql = x + (five ? 48 : 16);
                const uint8_t* qh = x + 16;
                int is = 0;
                uint8_t u1 = 1, u2 = 2;
                for (int j = 0; j < QK_K; j += 64) {
                    uint8_t sc, m;
                    get_scale_min_k4(is + 0, x + 4, &sc, &m);
                    const float d1 = d * sc, m1 = min * m;
                    get_scale_min_k4(is + 1, x + 4, &sc, &m);
                    const float d2 = d * sc, m2 = min * m;
                    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
                    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
                    ql += 32;
                    is += 2;
                    u1 = static_cast<uint8_t>(u1 << 2);
                    u2 = static_cast<uint8_t>(u2 << 2);
                }
                break;
            }
            case KQuant::Q6_K: {  // dequantize_row_q6_K
                const float d = get_fp16(x + 208);
                const uint8_t* ql = x;
                const uint8_t* qh = x + 128;
                const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
                for (int n = 0; n < QK_K; n += 128) {
                    for (int l = 0; l < 32; ++l) {
                        int is = l / 16;
                        const int8_t q1 = static_cast<int8_t>(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                        const int8_t q2 = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                        const int8_t q3 = static_cast<int8_t>(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                        const int8_t q4 = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
                        y[l + 0] = d * sc[is + 0] * q1;
                        y[l + 32] = d * sc[is + 2] * q2;
                        y[l + 64] = d * sc[is + 4] * q3;
                        y[l + 96] = d * sc[is + 6] * q4;
                    }
                    y += 128;
                    ql += 64;
                    qh += 32;
                    sc += 8;
                }
                break;
            }
            case KQuant::IQ4_NL: {  // dequantize_row_iq4_nl
                const float d = get_fp16(x);
                for (int j = 0; j < 16; ++j) {
                    y[j] = d * kvalues_iq4nl[x[2 + j] & 0xf];
                    y[j + 16] = d * kvalues_iq4nl[x[2 + j] >> 4];
                }
                break;
            }
            case KQuant::IQ4_XS: {  // dequantize_row_iq4_xs
                const float d = get_fp16(x);
                const int scales_h = x[2] | (x[3] << 8);
                const uint8_t* qs = x + 8;
                for (int ib = 0; ib < QK_K / 32; ++ib) {
                    const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
                    const float dl = d * (ls - 32);
                    for (int j = 0; j < 16; ++j) {
                        y[j + 0] = dl * kvalues_iq4nl[qs[j] & 0xf];
                        y[j + 16] = dl * kvalues_iq4nl[qs[j] >> 4];
                    }
                    y += 32;
                    qs += 16;
                }
                break;
            }
        }
    }
    return out;
}

}  // namespace ql::kernels::reference
