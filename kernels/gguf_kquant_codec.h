// SPDX-License-Identifier: GPL-3.0-or-later
// One GGUF super-block of the K-quant and IQ4 types (Q2_K..Q6_K: 256 elements in 16 or 8
// sub-blocks with 4- or 6-bit sub-block scales and an fp16 super scale; IQ4_XS: 256 in 8
// sub-blocks on the kvalues_iq4nl grid; IQ4_NL: blocks of 32, encoded 8 at a time): the encoders
// (ggml's quantize_row_*_ref without importance, quantize_row_*_impl with it), decoders
// (dequantize_row_*), code/scale accessors and the stored fields. Layouts, searches and sources:
// shared/design/GGUF_KQUANTS.md sections 2, 4 and 8; the searches are gguf_kquant_search.h.
// Shared by the CPU kernels (gguf_blocks.cpp) and the CUDA kernels (cuda/gguf_blocks.cu).
//
// Non-finite input (ggml's own searches are undefined there): the search sees NaN and +-Inf as
// 0; afterwards +-Inf get the code whose value is the sub-block's largest (smallest), NaN keeps
// the code of 0. Importance (qw): per-element weights, finite and >= 0, or nullptr.
#pragma once

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_kquant_search.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels::kquant {

// ---- shapes ----------------------------------------------------------------------------------

QL_HD constexpr int kq_block_bytes(GgufType t) {
    return t == GgufType::Q2_K     ? 84
           : t == GgufType::Q3_K   ? 110
           : t == GgufType::Q4_K   ? 144
           : t == GgufType::Q5_K   ? 176
           : t == GgufType::Q6_K   ? 210
           : t == GgufType::IQ4_NL ? 18
                                   : 136;  // IQ4_XS
}
QL_HD constexpr int kq_block_elements(GgufType t) { return t == GgufType::IQ4_NL ? 32 : QK_K; }
// Elements per stored scale (16 for Q2_K/Q3_K/Q6_K, 32 otherwise).
QL_HD constexpr int kq_sub_block(GgufType t) {
    return t == GgufType::Q2_K || t == GgufType::Q3_K || t == GgufType::Q6_K ? 16 : 32;
}
QL_HD constexpr bool kq_has_min(GgufType t) { return t == GgufType::Q2_K || t == GgufType::Q4_K || t == GgufType::Q5_K; }
// Largest element code: 3, 7, 15, 31, 63, 15, 15.
QL_HD constexpr int kq_max_code(GgufType t) {
    return t == GgufType::Q2_K ? 3 : t == GgufType::Q3_K ? 7 : t == GgufType::Q5_K ? 31 : t == GgufType::Q6_K ? 63 : 15;
}

// ---- transposition and sanitising ----------------------------------------------------------

// Where element i of sub-block j lives in a "lane" array: sub-blocks go in groups of 8 lanes
// (gguf_kquant_search.h's K = 8), each group transposed: [group][i][j % 8].
template <int N>
QL_HD constexpr int lane_at(int j, int i) {
    return (j / 8) * (8 * N) + i * 8 + (j % 8);
}

// xt[lane_at(j, i)] = x[j * N + i] for K sub-blocks of N, non-finite values as 0. Returns
// whether x held any.
template <int K, int N>
QL_HD bool load_lanes(const float* x, float* xt) {
    uint32_t bad = 0;
    for (int j = 0; j < K; ++j)
        for (int i = 0; i < N; ++i) {
            const float v = x[j * N + i];
            const uint32_t nonfinite = magnitude_bits(v) >= kInfBits ? 1u : 0u;
            bad |= nonfinite;
            xt[lane_at<N>(j, i)] = nonfinite ? 0.0f : v;
        }
    return bad != 0;
}

template <int K, int N>
QL_HD void transpose_in(const float* x, float* xt) {
    for (int j = 0; j < K; ++j)
        for (int i = 0; i < N; ++i) xt[lane_at<N>(j, i)] = x[j * N + i];
}

// The sum of squares of a super-block in element order (ggml's sequential loop).
template <int K, int N>
QL_HD float sum_squares_in_order(const float* xt) {
    float s = 0.0f;
    for (int j = 0; j < K; ++j)
        for (int i = 0; i < N; ++i) s += xt[lane_at<N>(j, i)] * xt[lane_at<N>(j, i)];
    return s;
}

// Runs f(offset of the group's lane data, first sub-block of the group) for each group of 8.
template <int K, int N, class F>
QL_HD void for_each_lane_group(const F& f) {
    for (int g = 0; g < K / 8; ++g) f(g * 8 * N, g * 8);
}

// ggml's 2-bit field of Q2_K / Q3_K: element e in qs[32 (e / 128) + e % 32] at bit 2 ((e % 128) / 32).
template <class CodeAt>
QL_HD void pack_2bit(const CodeAt& code, uint8_t* qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = static_cast<uint8_t>((code(j + l) & 3) | ((code(j + l + 32) & 3) << 2) |
                                                 ((code(j + l + 64) & 3) << 4) | ((code(j + l + 96) & 3) << 6));
}

// get_scale_min_k4 / its inverse (Q4_K, Q5_K).
QL_HD void get_scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
QL_HD void put_scale_min_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* q) {
    for (int j = 0; j < 4; ++j) {
        q[j] = ls[j];
        q[j + 4] = lm[j];
    }
    for (int j = 4; j < 8; ++j) {
        q[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
        q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((ls[j] >> 4) << 6));
        q[j] = static_cast<uint8_t>(q[j] | ((lm[j] >> 4) << 6));
    }
}

// Q3_K: sixteen 6-bit scales (stored + 32) in 12 bytes, and one of them back, signed.
QL_HD void put_q3_scales(const int* ls, uint8_t* q) {
    for (int j = 0; j < 12; ++j) q[j] = 0;
    for (int j = 0; j < 16; ++j) {
        const int l = ls[j];
        if (j < 8)
            q[j] = static_cast<uint8_t>(l & 0xF);
        else
            q[j - 8] = static_cast<uint8_t>(q[j - 8] | ((l & 0xF) << 4));
        q[j % 4 + 8] = static_cast<uint8_t>(q[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
    }
}
QL_HD int get_q3_scale(int j, const uint8_t* q) {
    const int lo = j < 8 ? q[j] & 0xF : q[j - 8] >> 4;
    return static_cast<int8_t>((lo | (((q[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
}

// IQ4_XS sub-block scale ls in 0..63 (value (ls - 32) d).
QL_HD int get_iq4xs_scale(int ib, const uint8_t* y) {
    const int scales_h = y[2] | (y[3] << 8);
    return ((y[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
}

// ---- Q2_K ------------------------------------------------------------------------------------
// 84 B: scales[16] (low nibble scale, high nibble min) @0, qs[64] @16, d @80, dmin @82.

QL_HD void encode_q2_k(const float* xt, const float* qwt, uint8_t* y) {
    constexpr int K = 16, N = 16;
    float wt[QK_K], scales[K], mins[K], L[QK_K];
    if (!qwt) {
        for (int i = 0; i < QK_K; ++i) wt[i] = abs_bits(xt[i]);
        for_each_lane_group<K, N>([&](int o, int j) {
            make_qkx_lanes<8, N, false, true>(xt + o, wt + o, 3, -0.5f, 0.1f, 15, L + o, scales + j, mins + j);
        });
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < K; ++j) {
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        for (int j = 0; j < K; ++j) y[j] = 0;
        if (max_scale > 0.0f) {
            const float iscale = 15.0f / max_scale;
            for (int j = 0; j < K; ++j) y[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
        }
        store_fp16(y + 80, max_scale > 0.0f ? max_scale / 15.0f : 0.0f);
        if (max_min > 0.0f) {
            const float iscale = 15.0f / max_min;
            for (int j = 0; j < K; ++j)
                y[j] = static_cast<uint8_t>(y[j] | (static_cast<unsigned>(nearest_int(iscale * mins[j])) << 4));
        }
        store_fp16(y + 82, max_min > 0.0f ? max_min / 15.0f : 0.0f);
    } else {
        const float sigma2 = sum_squares_in_order<K, N>(xt) / static_cast<float>(QK_K);
        float sw[K];
        for (int i = 0; i < QK_K; ++i) wt[i] = qwt[i] * std::sqrt(sigma2 + xt[i] * xt[i]);
        for (int k = 0; k < K; ++k) sw[k] = 0.0f;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) sw[k] += wt[lane_at<N>(k, i)];
        for_each_lane_group<K, N>([&](int o, int j) {
            make_qkx_lanes<8, N, true, false>(xt + o, wt + o, 3, -0.9f, 0.05f, 36, L + o, scales + j, mins + j);
        });
        uint8_t Ls[K], Lm[K];
        const float dm = make_qp_quants<K>(15, scales, Ls, sw);
        const float mm = make_qp_quants<K>(15, mins, Lm, sw);
        store_fp16(y + 80, dm);
        store_fp16(y + 82, mm);
        for (int j = 0; j < K; ++j) y[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    }
    const float d = load_fp16(y + 80), dmin = load_fp16(y + 82);
    float dl[K], ml[K];
    for (int k = 0; k < K; ++k) {
        dl[k] = d * static_cast<float>(y[k] & 0xF);
        ml[k] = dmin * static_cast<float>(y[k] >> 4);
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const int l = clamp_int(nearest_int((xt[lane_at<N>(k, i)] + ml[k]) / dl[k]), 0, 3);
            L[lane_at<N>(k, i)] = dl[k] != 0.0f ? static_cast<float>(l) : L[lane_at<N>(k, i)];
        }
    pack_2bit([&](int e) { return static_cast<int>(L[lane_at<N>(e / N, e % N)]); }, y + 16);
}

QL_HD int q2_k_code(const uint8_t* y, int e) { return (y[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

QL_HD void decode_q2_k(const uint8_t* y, float* out) {
    const float d = load_fp16(y + 80), dmin = load_fp16(y + 82);
    for (int j = 0; j < 16; ++j) {
        const float dl = d * static_cast<float>(y[j] & 0xF), ml = dmin * static_cast<float>(y[j] >> 4);
        for (int l = 0; l < 16; ++l) out[16 * j + l] = dl * static_cast<float>(q2_k_code(y, 16 * j + l)) - ml;
    }
}

// ---- Q3_K ------------------------------------------------------------------------------------
// 110 B: hmask[32] @0, qs[64] @32, scales[12] @96, d @108. Code q = low2 + 4 hbit, value (q - 4) dl.

QL_HD void encode_q3_k(const float* xt, const float* qwt, uint8_t* y) {
    constexpr int K = 16, N = 16;
    float scales[K], L[QK_K];
    int ls[K];
    if (!qwt) {
        for_each_lane_group<K, N>([&](int o, int j) { make_q3_lanes<8, N>(xt + o, 4, L + o, scales + j); });
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < K; ++j) {
            const float a = abs_bits(scales[j]);
            max_scale = a > amax ? scales[j] : max_scale;
            amax = a > amax ? a : amax;
        }
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < K; ++j) {
                const int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
                ls[j] = clamp_int(l, -32, 31) + 32;
            }
            put_q3_scales(ls, y + 96);
            store_fp16(y + 108, 1.0f / iscale);
        } else {
            for (int j = 0; j < 12; ++j) y[96 + j] = 0;
            store_fp16(y + 108, 0.0f);
        }
    } else {
        const float sigma2 = 2.0f * sum_squares_in_order<K, N>(xt) / static_cast<float>(QK_K);
        float wt[QK_K], sw[K];
        for (int i = 0; i < QK_K; ++i) wt[i] = qwt[i] * std::sqrt(sigma2 + xt[i] * xt[i]);
        for (int k = 0; k < K; ++k) sw[k] = 0.0f;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) sw[k] += wt[lane_at<N>(k, i)];
        for_each_lane_group<K, N>([&](int o, int j) { make_qx_lanes<8, N>(xt + o, wt + o, 4, L + o, scales + j); });
        const float d_block = make_qx_quants<K>(32, scales, ls, sw);
        put_q3_scales(ls, y + 96);
        store_fp16(y + 108, d_block);
    }
    const float d = load_fp16(y + 108);
    float dl[K];
    for (int k = 0; k < K; ++k) dl[k] = d * static_cast<float>(get_q3_scale(k, y + 96));
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const int l = clamp_int(nearest_int(xt[lane_at<N>(k, i)] / dl[k]), -4, 3) + 4;
            L[lane_at<N>(k, i)] = dl[k] != 0.0f ? static_cast<float>(l) : L[lane_at<N>(k, i)];
        }
    auto code = [&](int e) { return static_cast<int>(L[lane_at<N>(e / N, e % N)]); };
    for (int m = 0; m < 32; ++m) {
        int h = 0;
        for (int b = 0; b < 8; ++b) h |= (code(32 * b + m) > 3 ? 1 : 0) << b;
        y[m] = static_cast<uint8_t>(h);
    }
    pack_2bit([&](int e) { const int c = code(e); return c > 3 ? c - 4 : c; }, y + 32);
}

QL_HD int q3_k_code(const uint8_t* y, int e) {
    const int low = (y[32 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    return low + 4 * ((y[e % 32] >> (e / 32)) & 1);
}

QL_HD void decode_q3_k(const uint8_t* y, float* out) {
    const float d = load_fp16(y + 108);
    for (int j = 0; j < 16; ++j) {
        const float dl = d * static_cast<float>(get_q3_scale(j, y + 96));
        for (int l = 0; l < 16; ++l) out[16 * j + l] = dl * static_cast<float>(q3_k_code(y, 16 * j + l) - 4);
    }
}

// ---- Q4_K / Q5_K ----------------------------------------------------------------------------
// Q4_K 144 B: d @0, dmin @2, scales[12] @4, qs[128] @16.
// Q5_K 176 B: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48.

template <int NMAX>  // 15 (Q4_K) or 31 (Q5_K)
QL_HD void encode_q45_k(const float* xt, const float* qwt, uint8_t* y) {
    constexpr int K = 8, N = 32;
    float wt[QK_K], scales[K], mins[K], L[QK_K];
    uint8_t ls[K], lm[K];
    if (!qwt) {
        float sum_x2[K];
        for (int k = 0; k < K; ++k) sum_x2[k] = 0.0f;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) sum_x2[k] += xt[lane_at<N>(k, i)] * xt[lane_at<N>(k, i)];
        for (int k = 0; k < K; ++k) sum_x2[k] = std::sqrt(sum_x2[k] / 32.0f);  // av_x
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) wt[lane_at<N>(k, i)] = sum_x2[k] + abs_bits(xt[lane_at<N>(k, i)]);
        make_qkx_lanes<K, N, false, false>(xt, wt, NMAX, NMAX == 15 ? -1.0f : -0.5f, 0.1f, NMAX == 15 ? 20 : 15, L,
                                           scales, mins);
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < K; ++j) {
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < K; ++j) {
            const uint8_t s = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
            const uint8_t m = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
            ls[j] = s < 63 ? s : 63;
            lm[j] = m < 63 ? m : 63;
        }
        store_fp16(y, max_scale / 63.0f);
        store_fp16(y + 2, max_min / 63.0f);
    } else {
        const float sigma2 = 2.0f * sum_squares_in_order<K, N>(xt) / static_cast<float>(QK_K);
        float sw[K];
        for (int i = 0; i < QK_K; ++i) wt[i] = qwt[i] * std::sqrt(sigma2 + xt[i] * xt[i]);
        for (int k = 0; k < K; ++k) sw[k] = 0.0f;
        for (int i = 0; i < N; ++i)
            for (int k = 0; k < K; ++k) sw[k] += wt[lane_at<N>(k, i)];
        make_qkx_lanes<K, N, true, false>(xt, wt, NMAX, -0.9f, 0.05f, 36, L, scales, mins);
        const float d_block = make_qp_quants<K>(63, scales, ls, sw);
        const float m_block = make_qp_quants<K>(63, mins, lm, sw);
        if (NMAX == 31)  // quantize_row_q5_K_impl clamps; q4_K's does not
            for (int j = 0; j < K; ++j) {
                ls[j] = ls[j] < 63 ? ls[j] : 63;
                lm[j] = lm[j] < 63 ? lm[j] : 63;
            }
        store_fp16(y, d_block);
        store_fp16(y + 2, m_block);
    }
    put_scale_min_k4(ls, lm, y + 4);
    const float d = load_fp16(y), dmin = load_fp16(y + 2);
    float dl[K], ml[K];
    for (int k = 0; k < K; ++k) {
        int sc, m;
        get_scale_min_k4(k, y + 4, &sc, &m);
        dl[k] = d * static_cast<float>(sc);
        ml[k] = dmin * static_cast<float>(m);
    }
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const int l = clamp_int(nearest_int((xt[lane_at<N>(k, i)] + ml[k]) / dl[k]), 0, NMAX);
            L[lane_at<N>(k, i)] = dl[k] != 0.0f ? static_cast<float>(l) : L[lane_at<N>(k, i)];
        }
    // Element 64 c + l in the low nibble of qs[32 c + l], 64 c + 32 + l in the high one; Q5_K's
    // fifth bits in qh[l] at bits 2c and 2c + 1.
    uint8_t* qs = y + (NMAX == 15 ? 16 : 48);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            const int a = static_cast<int>(L[l * K + 2 * c]), b = static_cast<int>(L[l * K + 2 * c + 1]);
            qs[32 * c + l] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
        }
    if (NMAX == 31)
        for (int l = 0; l < 32; ++l) {
            int h = 0;
            for (int k = 0; k < K; ++k) h |= ((static_cast<int>(L[l * K + k]) >> 4) & 1) << k;
            y[16 + l] = static_cast<uint8_t>(h);
        }
}

template <int NMAX>
QL_HD int q45_k_code(const uint8_t* y, int e) {
    const int c = e / 64, l = e % 32, high = (e % 64) / 32;
    const uint8_t b = y[(NMAX == 15 ? 16 : 48) + 32 * c + l];
    const int low = high ? b >> 4 : b & 0xF;
    return NMAX == 15 ? low : low | (((y[16 + l] >> (2 * c + high)) & 1) << 4);
}

template <int NMAX>
QL_HD void decode_q45_k(const uint8_t* y, float* out) {
    const float d = load_fp16(y), dmin = load_fp16(y + 2);
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        get_scale_min_k4(j, y + 4, &sc, &m);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) out[32 * j + l] = dl * static_cast<float>(q45_k_code<NMAX>(y, 32 * j + l)) - ml;
    }
}

// ---- Q6_K ------------------------------------------------------------------------------------
// 210 B: ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208. Value (q - 32) d sc.

QL_HD void encode_q6_k(const float* xt, const float* qwt, uint8_t* y) {
    constexpr int K = 16, N = 16;
    float scales[K], L[QK_K];
    for_each_lane_group<K, N>(
        [&](int o, int j) { make_qx_lanes<8, N>(xt + o, qwt ? qwt + o : nullptr, 32, L + o, scales + j); });
    float max_scale = 0.0f, max_abs = 0.0f;
    for (int j = 0; j < K; ++j) {
        const float a = abs_bits(scales[j]);
        max_scale = a > max_abs ? scales[j] : max_scale;
        max_abs = a > max_abs ? a : max_abs;
    }
    if (max_abs < kGroupMaxEps) {
        for (int j = 0; j < 210; ++j) y[j] = 0;
        return;
    }
    const float iscale = -128.0f / max_scale;
    store_fp16(y + 208, 1.0f / iscale);
    for (int j = 0; j < K; ++j) {
        const int s = nearest_int(iscale * scales[j]);
        y[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(s < 127 ? s : 127));
    }
    const float d = load_fp16(y + 208);
    float dl[K];
    for (int k = 0; k < K; ++k) dl[k] = d * static_cast<float>(static_cast<int8_t>(y[192 + k]));
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) {
            const int l = clamp_int(nearest_int(xt[lane_at<N>(k, i)] / dl[k]), -32, 31) + 32;
            L[lane_at<N>(k, i)] = dl[k] != 0.0f ? static_cast<float>(l) : L[lane_at<N>(k, i)];
        }
    auto code = [&](int e) { return static_cast<int>(L[lane_at<N>(e / N, e % N)]); };
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const int e = 128 * h + l;
            const int q1 = code(e), q2 = code(e + 32), q3 = code(e + 64), q4 = code(e + 96);
            y[64 * h + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
            y[64 * h + 32 + l] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
            y[128 + 32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
}

QL_HD int q6_k_code(const uint8_t* y, int e) {
    const int h = e / 128, r = e % 128, l = r % 32, quarter = r / 32;  // quarter 0..3: +0, +32, +64, +96
    const uint8_t b = y[64 * h + (quarter & 1) * 32 + l];
    const int low = quarter >= 2 ? b >> 4 : b & 0xF;
    return low | (((y[128 + 32 * h + l] >> (2 * quarter)) & 3) << 4);
}

QL_HD void decode_q6_k(const uint8_t* y, float* out) {
    const float d = load_fp16(y + 208);
    for (int j = 0; j < 16; ++j) {
        const float dl = d * static_cast<float>(static_cast<int8_t>(y[192 + j]));
        for (int l = 0; l < 16; ++l) out[16 * j + l] = dl * static_cast<float>(q6_k_code(y, 16 * j + l) - 32);
    }
}

// ---- IQ4_XS / IQ4_NL ------------------------------------------------------------------------
// IQ4_XS 136 B: d @0, scales_h u16 @2, scales_l[4] @4, qs[128] @8; IQ4_NL 18 B: d @0, qs[16] @2.
// In both, element j of a 32-block in the low nibble of qs[j], j + 16 in the high nibble.

// The per-element weights of quantize_row_iq4_nl_impl for K lanes of 32 whose sum of squares
// (in element order, over the super-block) is sumsq: qw * sqrt(2 sumsq / size + x^2), or x^2.
template <int K>
QL_HD void iq4_weights(const float* xt, const float* qwt, const float* sigma2, float* wt) {
    for (int i = 0; i < 32; ++i)
        for (int k = 0; k < K; ++k) {
            const float x = xt[lane_at<32>(k, i)];
            wt[lane_at<32>(k, i)] = qwt ? qwt[lane_at<32>(k, i)] * std::sqrt(sigma2[k] + x * x) : x * x;
        }
}

// L = best_index_int8(kvalues_iq4nl, inv[k] * x) for K lanes of 32.
template <int K>
QL_HD void iq4_codes(const float* xt, const float* inv, float* L) {
    using namespace lanes;
    const VF<K> s = load<K>(inv);
    for (int i = 0; i < 32; ++i) {
        VF<K> idx, value;
        iq4_best_index_lanes<K>(s * load<K>(xt + i * K), &idx, &value);
        store<K>(L + i * K, idx);
    }
}

QL_HD void encode_iq4_xs(const float* xt, const float* qwt, uint8_t* y) {
    constexpr int K = 8, N = 32;
    float sigma2[K], wt[QK_K], scales[K];
    const float s2 = sum_squares_in_order<K, N>(xt) * (2.0f / QK_K);
    for (int k = 0; k < K; ++k) sigma2[k] = s2;
    iq4_weights<K>(xt, qwt, sigma2, wt);
    iq4_scale_lanes<K>(xt, wt, scales);
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int j = 0; j < K; ++j) {
        const float a = abs_bits(scales[j]);
        max_scale = a > amax_scale ? scales[j] : max_scale;
        amax_scale = a > amax_scale ? a : amax_scale;
    }
    const float d = -max_scale / 32.0f;
    store_fp16(y, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    float idl[K];
    int sh = 0;
    for (int k = 0; k < K; ++k) y[4 + k / 2] = 0;
    for (int k = 0; k < K; ++k) {
        const int l = clamp_int(nearest_int(id * scales[k]), -32, 31);
        const float dl = d * static_cast<float>(l);
        idl[k] = dl != 0.0f ? 1.0f / dl : 0.0f;
        const int s = l + 32;
        y[4 + k / 2] = static_cast<uint8_t>(y[4 + k / 2] | ((s & 0xF) << (4 * (k % 2))));
        sh |= (s >> 4) << (2 * k);
    }
    y[2] = static_cast<uint8_t>(sh & 0xFF);
    y[3] = static_cast<uint8_t>(sh >> 8);
    float L[QK_K];
    iq4_codes<K>(xt, idl, L);
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < 16; ++j)
            y[8 + 16 * k + j] = static_cast<uint8_t>(static_cast<int>(L[j * K + k]) | (static_cast<int>(L[(j + 16) * K + k]) << 4));
}

// `count` (1..8) consecutive IQ4_NL blocks: xt holds 8 lanes of 32 (unused lanes zero).
QL_HD void encode_iq4_nl_x8(const float* xt, const float* qwt, uint8_t* y, int count) {
    constexpr int K = 8, N = 32;
    float sigma2[K], wt[K * N], scales[K];
    for (int k = 0; k < K; ++k) sigma2[k] = 0.0f;
    for (int i = 0; i < N; ++i)
        for (int k = 0; k < K; ++k) sigma2[k] += xt[lane_at<N>(k, i)] * xt[lane_at<N>(k, i)];
    for (int k = 0; k < K; ++k) sigma2[k] *= 2.0f / 32;
    iq4_weights<K>(xt, qwt, sigma2, wt);
    iq4_scale_lanes<K>(xt, wt, scales);
    float id[K];
    for (int k = 0; k < K; ++k) id[k] = scales[k] != 0.0f ? 1.0f / scales[k] : 0.0f;
    float L[K * N];
    iq4_codes<K>(xt, id, L);
    for (int k = 0; k < count; ++k) {
        store_fp16(y + 18 * k, scales[k]);
        for (int j = 0; j < 16; ++j)
            y[18 * k + 2 + j] = static_cast<uint8_t>(static_cast<int>(L[j * K + k]) | (static_cast<int>(L[(j + 16) * K + k]) << 4));
    }
}

QL_HD int iq4_code(const uint8_t* qs, int e) {  // e within its block of 32
    const uint8_t b = qs[e % 16];
    return e < 16 ? b & 0xF : b >> 4;
}

QL_HD void decode_iq4_xs(const uint8_t* y, float* out) {
    const float d = load_fp16(y);
    for (int ib = 0; ib < 8; ++ib) {
        const float dl = d * static_cast<float>(get_iq4xs_scale(ib, y) - 32);
        for (int j = 0; j < 32; ++j) out[32 * ib + j] = dl * iq4_value(iq4_code(y + 8 + 16 * ib, j));
    }
}

QL_HD void decode_iq4_nl(const uint8_t* y, float* out) {
    const float d = load_fp16(y);
    for (int j = 0; j < 32; ++j) out[j] = d * iq4_value(iq4_code(y + 2, j));
}

// ---- by type -----------------------------------------------------------------------------------

// Element code of element e (0..block - 1) of one block.
QL_HD int element_code(GgufType t, const uint8_t* y, int e) {
    switch (t) {
        case GgufType::Q2_K: return q2_k_code(y, e);
        case GgufType::Q3_K: return q3_k_code(y, e);
        case GgufType::Q4_K: return q45_k_code<15>(y, e);
        case GgufType::Q5_K: return q45_k_code<31>(y, e);
        case GgufType::Q6_K: return q6_k_code(y, e);
        case GgufType::IQ4_NL: return iq4_code(y + 2, e);
        case GgufType::IQ4_XS: return iq4_code(y + 8 + 16 * (e / 32), e % 32);
        default: return 0;
    }
}

// The decoded scale (and min) of sub-block j: value = scale * f(code) - min with f(code) = code
// (Q2_K, Q4_K, Q5_K), code - 4 (Q3_K), code - 32 (Q6_K), kvalues_iq4nl[code] (IQ4).
QL_HD void sub_block_scale(GgufType t, const uint8_t* y, int j, float* scale, float* min) {
    *min = 0.0f;
    switch (t) {
        case GgufType::Q2_K:
            *scale = load_fp16(y + 80) * static_cast<float>(y[j] & 0xF);
            *min = load_fp16(y + 82) * static_cast<float>(y[j] >> 4);
            return;
        case GgufType::Q3_K: *scale = load_fp16(y + 108) * static_cast<float>(get_q3_scale(j, y + 96)); return;
        case GgufType::Q4_K:
        case GgufType::Q5_K: {
            int sc, m;
            get_scale_min_k4(j, y + 4, &sc, &m);
            *scale = load_fp16(y) * static_cast<float>(sc);
            *min = load_fp16(y + 2) * static_cast<float>(m);
            return;
        }
        case GgufType::Q6_K: *scale = load_fp16(y + 208) * static_cast<float>(static_cast<int8_t>(y[192 + j])); return;
        case GgufType::IQ4_NL: *scale = load_fp16(y); return;
        case GgufType::IQ4_XS: *scale = load_fp16(y) * static_cast<float>(get_iq4xs_scale(j, y) - 32); return;
        default: *scale = 0.0f; return;
    }
}

QL_HD float code_value(GgufType t, int code) {
    switch (t) {
        case GgufType::Q3_K: return static_cast<float>(code - 4);
        case GgufType::Q6_K: return static_cast<float>(code - 32);
        case GgufType::IQ4_NL:
        case GgufType::IQ4_XS: return iq4_value(code);
        default: return static_cast<float>(code);
    }
}

// Overwrites the code of element e (the layout's bit fields for it).
QL_HD void set_element_code(GgufType t, uint8_t* y, int e, int c) {
    auto put2 = [&](uint8_t* qs) {
        uint8_t& b = qs[32 * (e / 128) + e % 32];
        const int s = 2 * ((e % 128) / 32);
        b = static_cast<uint8_t>((b & ~(3 << s)) | ((c & 3) << s));
    };
    auto put_nibble = [&](uint8_t& b, bool high, int v) {
        b = static_cast<uint8_t>(high ? (b & 0x0F) | ((v & 0xF) << 4) : (b & 0xF0) | (v & 0xF));
    };
    switch (t) {
        case GgufType::Q2_K: put2(y + 16); return;
        case GgufType::Q3_K: {
            put2(y + 32);
            uint8_t& h = y[e % 32];
            h = static_cast<uint8_t>((h & ~(1 << (e / 32))) | (((c >> 2) & 1) << (e / 32)));
            return;
        }
        case GgufType::Q4_K:
        case GgufType::Q5_K: {
            const int cc = e / 64, l = e % 32, high = (e % 64) / 32;
            put_nibble(y[(t == GgufType::Q4_K ? 16 : 48) + 32 * cc + l], high != 0, c);
            if (t == GgufType::Q5_K) {
                uint8_t& h = y[16 + l];
                const int bit = 2 * cc + high;
                h = static_cast<uint8_t>((h & ~(1 << bit)) | (((c >> 4) & 1) << bit));
            }
            return;
        }
        case GgufType::Q6_K: {
            const int h = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
            put_nibble(y[64 * h + (quarter & 1) * 32 + l], quarter >= 2, c);
            uint8_t& qh = y[128 + 32 * h + l];
            qh = static_cast<uint8_t>((qh & ~(3 << (2 * quarter))) | (((c >> 4) & 3) << (2 * quarter)));
            return;
        }
        case GgufType::IQ4_NL: put_nibble(y[2 + e % 16], e % 32 >= 16, c); return;
        case GgufType::IQ4_XS: put_nibble(y[8 + 16 * (e / 32) + e % 16], e % 32 >= 16, c); return;
        default: return;
    }
}

// +-Inf elements of x get the code of their sub-block's largest / smallest value (of the codes
// 0 and max, the two ends of every grid here); the first on ties.
QL_HD void saturate_infinities(GgufType t, const float* x, uint8_t* y) {
    const int n = kq_block_elements(t), sub = kq_sub_block(t), top = kq_max_code(t);
    for (int e = 0; e < n; ++e) {
        if (magnitude_bits(x[e]) != kInfBits) continue;
        float s, m;
        sub_block_scale(t, y, e / sub, &s, &m);
        const float v0 = s * code_value(t, 0) - m, v1 = s * code_value(t, top) - m;
        const bool want_top = x[e] > 0.0f ? v1 > v0 : v1 < v0;
        set_element_code(t, y, e, want_top ? top : 0);
    }
}

// One block of type T (256 elements; IQ4_NL: up to 8 blocks of 32, `count` of them) from x,
// with per-element importance qw (same layout as x) or nullptr.
template <GgufType T>
QL_HD void encode_kquant(const float* x, const float* qw, uint8_t* y, int count = 1) {
    constexpr int K = (T == GgufType::Q2_K || T == GgufType::Q3_K || T == GgufType::Q6_K) ? 16 : 8;
    constexpr int N = QK_K / K;
    float xt[QK_K], qwt[QK_K];
    bool nonfinite;
    if constexpr (T == GgufType::IQ4_NL) {
        float xp[QK_K], qp[QK_K];
        for (int i = 0; i < QK_K; ++i) {
            xp[i] = i < 32 * count ? x[i] : 0.0f;
            qp[i] = qw && i < 32 * count ? qw[i] : 0.0f;
        }
        nonfinite = load_lanes<K, N>(xp, xt);
        if (qw) transpose_in<K, N>(qp, qwt);
        encode_iq4_nl_x8(xt, qw ? qwt : nullptr, y, count);
        if (nonfinite)
            for (int k = 0; k < count; ++k) saturate_infinities(T, x + 32 * k, y + 18 * k);
        return;
    } else {
        nonfinite = load_lanes<K, N>(x, xt);
        if (qw) transpose_in<K, N>(qw, qwt);
        const float* q = qw ? qwt : nullptr;
        if constexpr (T == GgufType::Q2_K) encode_q2_k(xt, q, y);
        if constexpr (T == GgufType::Q3_K) encode_q3_k(xt, q, y);
        if constexpr (T == GgufType::Q4_K) encode_q45_k<15>(xt, q, y);
        if constexpr (T == GgufType::Q5_K) encode_q45_k<31>(xt, q, y);
        if constexpr (T == GgufType::Q6_K) encode_q6_k(xt, q, y);
        if constexpr (T == GgufType::IQ4_XS) encode_iq4_xs(xt, q, y);
        if (nonfinite) saturate_infinities(T, x, y);
    }
}

template <GgufType T>
QL_HD void decode_kquant(const uint8_t* y, float* out) {
    if constexpr (T == GgufType::Q2_K) decode_q2_k(y, out);
    if constexpr (T == GgufType::Q3_K) decode_q3_k(y, out);
    if constexpr (T == GgufType::Q4_K) decode_q45_k<15>(y, out);
    if constexpr (T == GgufType::Q5_K) decode_q45_k<31>(y, out);
    if constexpr (T == GgufType::Q6_K) decode_q6_k(y, out);
    if constexpr (T == GgufType::IQ4_NL) decode_iq4_nl(y, out);
    if constexpr (T == GgufType::IQ4_XS) decode_iq4_xs(y, out);
}

}  // namespace ql::kernels::kquant
