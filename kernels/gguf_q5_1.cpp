// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_q5_1.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/gguf_importance_codec.h"
#include "kernels/gguf_min_avx2.h"
#include "kernels/half_precision.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

constexpr int kQk = 32;

// C's (uint8_t)(float) as x86-64 compiles it (cvttss2si to int32, then the low byte): exact for
// 0 <= v < 256; NaN and out-of-range values give the "integer indefinite" 0x80000000.
uint8_t to_u8(float v) {
    const int32_t i = (v >= -2147483648.0f && v < 2147483648.0f) ? static_cast<int32_t>(v) : INT32_MIN;
    return static_cast<uint8_t>(static_cast<uint32_t>(i) & 0xFFu);
}

void store_fp16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16_bits(v);
    std::memcpy(p, &h, 2);
}

float load_fp16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_bits_to_fp32(h);
}

void encode_block(const float* x, uint8_t* out) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQk; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(out, d);
    store_fp16(out + 2, min);
    uint32_t qh = 0;
    for (int j = 0; j < kQk / 2; ++j) {
        const float x0 = (x[j] - min) * id;
        const float x1 = (x[kQk / 2 + j] - min) * id;
        const uint8_t q0 = to_u8(x0 + 0.5f), q1 = to_u8(x1 + 0.5f);
        out[8 + j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q0 & 0x10u) >> 4) << j;
        qh |= static_cast<uint32_t>((q1 & 0x10u) >> 4) << (j + kQk / 2);
    }
    std::memcpy(out + 4, &qh, 4);
}

void decode_block(const uint8_t* in, float* y) {
    const float d = load_fp16(in), m = load_fp16(in + 2);
    uint32_t qh;
    std::memcpy(&qh, in + 4, 4);
    for (int j = 0; j < kQk / 2; ++j) {
        const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
        const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
        y[j] = static_cast<float>((in[8 + j] & 0x0F) | h0) * d + m;
        y[j + kQk / 2] = static_cast<float>((in[8 + j] >> 4) | h1) * d + m;
    }
}

// quantize_row_q5_1_impl for `count` (1..8) consecutive blocks of one row.
void encode_weighted_x8(const float* x, const float* qw, float sigma2, uint8_t* y, int count) {
    using namespace kquant;
    constexpr int K = 8, N = kQk;
    float xp[K * N], qp[K * N], xt[K * N], wt[K * N], L[K * N], scale[K], the_min[K];
    for (int i = 0; i < K * N; ++i) {
        xp[i] = i < N * count ? x[i] : 0.0f;
        qp[i] = i < N * count ? qw[i] : 0.0f;
    }
    load_lanes<K, N>(xp, xt);
    transpose_in<K, N>(qp, wt);
    for (int i = 0; i < K * N; ++i) wt[i] = wt[i] * std::sqrt(sigma2 + xt[i] * xt[i]);
    make_qkx_lanes<K, N, true, false>(xt, wt, 31, -0.9f, 0.05f, 36, L, scale, the_min);
    for (int k = 0; k < count; ++k) {
        uint8_t* b = y + kGgufQ5_1BlockBytes * k;
        kquant::store_fp16(b, scale[k]);
        kquant::store_fp16(b + 2, -the_min[k]);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            const int lo = static_cast<int>(L[lane_at<N>(k, j)]), hi = static_cast<int>(L[lane_at<N>(k, j + 16)]);
            b[8 + j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
            qh |= (static_cast<uint32_t>((lo >> 4) & 1) << j) | (static_cast<uint32_t>((hi >> 4) & 1) << (j + 16));
        }
        std::memcpy(b + 4, &qh, 4);
    }
}

}  // namespace

void gguf_q5_1_quantize(const float* x, int64_t rows, int64_t cols, uint8_t* blocks, const float* importance) {
    const int64_t bpr = cols / kQk;
    if (!importance) {
        const int64_t nblocks = rows * bpr;
        const bool avx2 = gguf_min_avx2_available();  // same bytes, hand-vectorised (gguf_min_avx2.h)
        parallel_ranges(nblocks, 4096, 1, [&](int64_t b, int64_t e) {
            if (avx2) return quantize_q5_1_avx2(x + b * kQk, blocks + b * kGgufQ5_1BlockBytes, e - b, encode_block);
            for (int64_t k = b; k < e; ++k) encode_block(x + k * kQk, blocks + k * kGgufQ5_1BlockBytes);
        });
        return;
    }
    parallel_ranges(rows, 16, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* row = x + r * cols;
            const float sigma2 = kquant::row_sigma2(row, cols);
            for (int64_t b = 0; b < bpr; b += 8) {
                const int count = static_cast<int>(std::min<int64_t>(8, bpr - b));
                encode_weighted_x8(row + b * kQk, importance + b * kQk, sigma2, blocks + (r * bpr + b) * kGgufQ5_1BlockBytes, count);
            }
        }
    });
}

void gguf_q5_1_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, float* y) {
    const int64_t nblocks = rows * (cols / kQk);
    parallel_ranges(nblocks, 4096, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) decode_block(blocks + k * kGgufQ5_1BlockBytes, y + k * kQk);
    });
}

}  // namespace ql::kernels
