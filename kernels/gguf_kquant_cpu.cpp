// SPDX-License-Identifier: GPL-3.0-or-later
// A translation unit of its own: the K-quant encoders inline into one large loop per type and
// clone, which takes the compiler minutes; keeping them apart from gguf_blocks.cpp keeps edits of
// the 32-element formats cheap to rebuild.
#include "kernels/gguf_kquant_cpu.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_block_codec.h"
#include "kernels/gguf_importance_codec.h"
#include "kernels/gguf_kquant_codec.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

using gguf_codec::kB;

// Calls v(std::integral_constant<GgufType, t>{}) for a K-quant / IQ4 type t.
template <class Visitor>
void visit_kquant_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q2_K: v(std::integral_constant<GgufType, GgufType::Q2_K>{}); return;
        case GgufType::Q3_K: v(std::integral_constant<GgufType, GgufType::Q3_K>{}); return;
        case GgufType::Q4_K: v(std::integral_constant<GgufType, GgufType::Q4_K>{}); return;
        case GgufType::Q5_K: v(std::integral_constant<GgufType, GgufType::Q5_K>{}); return;
        case GgufType::Q6_K: v(std::integral_constant<GgufType, GgufType::Q6_K>{}); return;
        case GgufType::IQ4_NL: v(std::integral_constant<GgufType, GgufType::IQ4_NL>{}); return;
        case GgufType::IQ4_XS: v(std::integral_constant<GgufType, GgufType::IQ4_XS>{}); return;
        default: return;
    }
}

// Blocks [b0, b0 + n) of a [rows, cols] tensor whose rows hold bpr blocks. IQ4_NL goes up to 8
// blocks at a time (one per lane; with importance, never across a row end), the others one
// super-block at a time.
template <GgufType T>
QL_CPU_CLONES void kquant_encode_range(const float* x, uint8_t* out, int64_t b0, int64_t n, int64_t bpr,
                                       const float* importance) {
    constexpr int64_t E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    constexpr int64_t group = T == GgufType::IQ4_NL ? 8 : 1;
    for (int64_t b = b0; b < b0 + n;) {
        int64_t count = std::min<int64_t>(group, b0 + n - b);
        if (importance) count = std::min(count, bpr - b % bpr);
        const float* qw = importance ? importance + (b % bpr) * E : nullptr;
        kquant::encode_kquant<T>(x + b * E, qw, out + b * B, static_cast<int>(count));
        b += count;
    }
}

template <GgufType T>
QL_CPU_CLONES void kquant_decode_range(const uint8_t* in, float* y, int64_t nblocks) {
    constexpr int64_t E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    for (int64_t b = 0; b < nblocks; ++b) kquant::decode_kquant<T>(in + b * B, y + b * E);
}

// Fake quantization of work units [u0, u1): unit u is group u % units_per_row of row
// u / units_per_row, a group being one block (IQ4_NL: up to 8). Each group is encoded into a
// stack buffer and decoded; a short row tail is padded with zeros (importance 0); NaN inputs
// stay NaN. x and y may be the same buffer.
template <GgufType T>
QL_CPU_CLONES void kquant_fake_units(const float* x, float* y, const RowBlocks& L, int64_t u0, int64_t u1,
                                     const float* importance) {
    constexpr int E = kquant::kq_block_elements(T), B = kquant::kq_block_bytes(T);
    constexpr int G = T == GgufType::IQ4_NL ? 8 : 1;
    const int64_t upr = ((L.cols + E - 1) / E + G - 1) / G;
    float in[E * G], qw[E * G], dec[E * G];
    uint8_t bytes[B * G];
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t r = u / upr, first = (u % upr) * E * G;
        const int64_t len = std::min<int64_t>(static_cast<int64_t>(E) * G, L.cols - first);
        const int count = static_cast<int>((len + E - 1) / E);
        const float* xr = x + r * L.cols + first;
        for (int i = 0; i < E * G; ++i) {
            in[i] = i < len ? xr[i] : 0.0f;
            if (importance) qw[i] = i < len ? importance[first + i] : 0.0f;
        }
        kquant::encode_kquant<T>(in, importance ? qw : nullptr, bytes, count);
        for (int k = 0; k < count; ++k) kquant::decode_kquant<T>(bytes + B * k, dec + E * k);
        float* yr = y + r * L.cols + first;
        for (int64_t i = 0; i < len; ++i) yr[i] = is_nan_bits(in[i]) ? in[i] : dec[i];
    }
}

// ggml's importance path of the 32-element types (gguf_importance_codec.h), row by row: rows
// [r0, r1) of x ([rows, n] with n % 32 == 0) -> out.
template <GgufType T>
QL_CPU_CLONES void weighted_rows(const float* x, int64_t n, int64_t r0, int64_t r1, const float* importance,
                                 uint8_t* out) {
    constexpr int64_t B = kquant::weighted_block_bytes(T);
    const int64_t bpr = n / kB;
    for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * n;
        const float sigma2 = kquant::row_sigma2(xr, n);
        for (int64_t b = 0; b < bpr; b += 8) {
            const int count = static_cast<int>(std::min<int64_t>(8, bpr - b));
            kquant::encode_weighted_x8<T>(xr + b * kB, importance + b * kB, sigma2, out + (r * bpr + b) * B, count);
        }
    }
}

template <class Visitor>
void visit_weighted_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q4_0: v(std::integral_constant<GgufType, GgufType::Q4_0>{}); return;
        case GgufType::Q4_1: v(std::integral_constant<GgufType, GgufType::Q4_1>{}); return;
        case GgufType::Q5_0: v(std::integral_constant<GgufType, GgufType::Q5_0>{}); return;
        default: return;
    }
}

}  // namespace

void kquant_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance) {
    const int64_t E = kquant::kq_block_elements(t), nb = rows * (cols / E);
    visit_kquant_type(t, [&](auto type) {
        parallel_ranges(nb, 4, 1, [&](int64_t b0, int64_t b1) {
            kquant_encode_range<decltype(type)::value>(x, blocks, b0, b1 - b0, cols / E, importance);
        });
    });
}

void kquant_dequantize_cpu(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y) {
    const int64_t E = kquant::kq_block_elements(t), nb = rows * (cols / E), ts = kquant::kq_block_bytes(t);
    visit_kquant_type(t, [&](auto type) {
        parallel_ranges(nb, 4096 / E, 1, [&](int64_t b0, int64_t b1) {
            kquant_decode_range<decltype(type)::value>(blocks + b0 * ts, y + b0 * E, b1 - b0);
        });
    });
}

void kquant_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance) {
    const int64_t group = t == GgufType::IQ4_NL ? 8 : 1;
    const int64_t E = kquant::kq_block_elements(t);
    const int64_t units = L.rows * (((L.cols + E - 1) / E + group - 1) / group);
    visit_kquant_type(t, [&](auto type) {
        parallel_ranges(units, 4, 1, [&](int64_t u0, int64_t u1) {
            kquant_fake_units<decltype(type)::value>(x, y, L, u0, u1, importance);
        });
    });
}

void weighted_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance) {
    visit_weighted_type(t, [&](auto type) {
        parallel_ranges(rows, 1, 1, [&](int64_t r0, int64_t r1) {
            weighted_rows<decltype(type)::value>(x, cols, r0, r1, importance, blocks);
        });
    });
}

void weighted_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance) {
    // Row by row: sigma2 is the (zero-padded) row's.
    const int64_t n = (L.cols + kB - 1) / kB * kB;
    visit_weighted_type(t, [&](auto type) {
        constexpr GgufType T = decltype(type)::value;
        parallel_ranges(L.rows, 1, 1, [&](int64_t r0, int64_t r1) {
            std::vector<float> row(static_cast<size_t>(n)), qw(static_cast<size_t>(n), 0.0f), dec(static_cast<size_t>(n));
            std::vector<uint8_t> bytes(static_cast<size_t>(n / kB * gguf_codec::block_bytes(T)));
            for (int64_t c = 0; c < L.cols; ++c) qw[c] = importance[c];
            for (int64_t r = r0; r < r1; ++r) {
                const float* xr = x + r * L.cols;
                for (int64_t c = 0; c < n; ++c) row[c] = c < L.cols ? xr[c] : 0.0f;
                weighted_rows<T>(row.data(), n, 0, 1, qw.data(), bytes.data());
                for (int64_t b = 0; b < n / kB; ++b)
                    gguf_codec::decode_block<T>(bytes.data() + b * gguf_codec::block_bytes(T), dec.data() + b * kB);
                float* yr = y + r * L.cols;
                for (int64_t c = 0; c < L.cols; ++c) yr[c] = is_nan_bits(row[c]) ? row[c] : dec[c];
            }
        });
    });
}

}  // namespace ql::kernels
