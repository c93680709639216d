// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's importance-weighted quantizers of the 32-element GGUF types (ggml-quants.c
// quantize_row_q4_0_impl, quantize_row_q4_1_impl, quantize_row_q5_0_impl; what
// ggml_quantize_chunk runs when it is given an imatrix): weights qw * sqrt(sigma2 + x^2), with
// sigma2 the mean square of the WHOLE row, then make_qx_quants (Q4_0, Q5_0) or make_qkx3_quants
// (Q4_1) per block, without a requantization pass. Eight blocks at a time, one per lane
// (gguf_kquant_search.h). Shared by the CPU and CUDA kernels.
#pragma once

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_kquant_codec.h"

namespace ql::kernels::kquant {

// Bytes per 32-block of the types with an importance path here.
QL_HD constexpr int weighted_block_bytes(GgufType t) { return t == GgufType::Q4_0 ? 18 : t == GgufType::Q4_1 ? 20 : 22; }

// Q4_0 / Q5_0 codes stand for code - 8 / code - 16.
QL_HD constexpr int nmax_of(GgufType t) { return t == GgufType::Q4_0 ? 8 : 16; }

// The mean square of a row as ggml computes it (sequential float sum over n elements, divided
// by n); non-finite values count as 0.
QL_HD float row_sigma2(const float* x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float v = magnitude_bits(x[i]) >= kInfBits ? 0.0f : x[i];
        s += v * v;
    }
    return s / static_cast<float>(n);
}

// `count` (1..8) consecutive blocks of x (and their importance qw, same layout) -> count blocks
// of type T at y. sigma2: row_sigma2 of their row.
template <GgufType T>
QL_HD void encode_weighted_x8(const float* x, const float* qw, float sigma2, uint8_t* y, int count) {
    constexpr int K = 8, N = 32;
    float xp[K * N], qp[K * N], xt[K * N], wt[K * N];
    for (int i = 0; i < K * N; ++i) {
        xp[i] = i < N * count ? x[i] : 0.0f;
        qp[i] = i < N * count ? qw[i] : 0.0f;
    }
    const bool nonfinite = load_lanes<K, N>(xp, xt);
    transpose_in<K, N>(qp, wt);
    for (int i = 0; i < K * N; ++i) wt[i] = wt[i] * std::sqrt(sigma2 + xt[i] * xt[i]);
    constexpr int bytes = weighted_block_bytes(T);
    float scale[K];
    if constexpr (T == GgufType::Q4_1) {
        float L[K * N], the_min[K];
        make_qkx_lanes<K, N, true, false>(xt, wt, 15, -0.9f, 0.05f, 36, L, scale, the_min);
        for (int k = 0; k < count; ++k) {
            uint8_t* b = y + bytes * k;
            store_fp16(b, scale[k]);
            store_fp16(b + 2, -the_min[k]);
            for (int j = 0; j < 16; ++j)
                b[4 + j] = static_cast<uint8_t>(static_cast<int>(L[j * K + k]) | (static_cast<int>(L[(j + 16) * K + k]) << 4));
        }
    } else {
        constexpr int nmax = nmax_of(T);
        float L[K * N];
        make_qx_lanes<K, N>(xt, wt, nmax, L, scale);
        for (int k = 0; k < count; ++k) {
            uint8_t* b = y + bytes * k;
            store_fp16(b, scale[k]);
            if constexpr (T == GgufType::Q4_0) {
                for (int j = 0; j < 16; ++j)
                    b[2 + j] = static_cast<uint8_t>(static_cast<int>(L[j * K + k]) | (static_cast<int>(L[(j + 16) * K + k]) << 4));
            } else {
                uint32_t qh = 0;
                for (int j = 0; j < 16; ++j) {
                    const int lo = static_cast<int>(L[j * K + k]), hi = static_cast<int>(L[(j + 16) * K + k]);
                    b[6 + j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
                    qh |= (static_cast<uint32_t>((lo >> 4) & 1) << j) | (static_cast<uint32_t>((hi >> 4) & 1) << (j + 16));
                }
                for (int q = 0; q < 4; ++q) b[2 + q] = static_cast<uint8_t>(qh >> (8 * q));
            }
        }
    }
    if (!nonfinite) return;
    // +-Inf: the code with the largest (smallest) value of the block's grid, as elsewhere.
    for (int k = 0; k < count; ++k) {
        uint8_t* b = y + bytes * k;
        const float d = load_fp16(b);
        for (int e = 0; e < N; ++e) {
            const float v = x[N * k + e];
            if (magnitude_bits(v) != kInfBits) continue;
            const int top = T == GgufType::Q5_0 ? 31 : 15;
            const float lo = T == GgufType::Q4_1 ? 0.0f : -static_cast<float>(nmax_of(T)) * d;
            const float hi = T == GgufType::Q4_1 ? 15.0f * d : static_cast<float>(top - nmax_of(T)) * d;
            const int c = (v > 0.0f) == (hi > lo) ? top : 0;
            uint8_t& nib = b[(T == GgufType::Q4_0 ? 2 : T == GgufType::Q4_1 ? 4 : 6) + e % 16];
            nib = static_cast<uint8_t>(e < 16 ? (nib & 0xF0) | (c & 0xF) : (nib & 0x0F) | ((c & 0xF) << 4));
            if (T == GgufType::Q5_0) {
                uint8_t& h = b[2 + e / 8];
                h = static_cast<uint8_t>((h & ~(1 << (e % 8))) | (((c >> 4) & 1) << (e % 8)));
            }
        }
    }
}

}  // namespace ql::kernels::kquant
