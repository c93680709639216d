// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_blocks.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_block_codec.h"
#include "kernels/gguf_importance_codec.h"
#include "kernels/gguf_kquant_codec.h"
#include "kernels/gguf_q4_0_avx2.h"

namespace ql::kernels {
namespace {

using namespace gguf_codec;

std::vector<float> make_log2_thresholds() {
    std::vector<float> t(277);
    for (int k = -149; k <= 127; ++k) {
        // Binade [2^k, 2^(k+1)) as ordered float bit patterns.
        const uint32_t first = float_bits(pow2_any(k));
        const uint32_t last = (k == 127 ? 0x7F7FFFFFu : float_bits(pow2_any(k + 1)) - 1u);
        auto rounds_up = [&](uint32_t b) {
            const float l = static_cast<float>(std::log2(static_cast<double>(bits_float(b))));
            return l >= static_cast<float>(k + 1);
        };
        if (!rounds_up(last)) {
            t[k + 149] = bits_float(kInfBits);
            continue;
        }
        uint32_t lo = first, hi = last;  // rounds_up(hi) is true
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (rounds_up(mid))
                hi = mid;
            else
                lo = mid + 1;
        }
        t[k + 149] = bits_float(lo);
    }
    return t;
}

template <GgufType T>
QL_CPU_CLONES void quantize_blocks(const float* x, uint8_t* out, int64_t nblocks, const float* log2_thresholds) {
    for (int64_t b = 0; b < nblocks; ++b) encode_block<T>(x + b * kB, out + b * block_bytes(T), log2_thresholds);
}

template <GgufType T>
QL_CPU_CLONES void dequantize_blocks(const uint8_t* in, float* y, int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b) decode_block<T>(in + b * block_bytes(T), y + b * kB);
}

template <GgufType T>
QL_CPU_CLONES void fake_blocks(const float* x, float* y, int64_t nblocks, const float* log2_thresholds) {
    float keep[kB];  // the input block: y may alias x
    for (int64_t b = 0; b < nblocks; ++b) {
        for (int i = 0; i < kB; ++i) keep[i] = x[b * kB + i];
        fake_quant_block<T>(keep, y + b * kB, log2_thresholds);
    }
}

bool is_kquant(GgufType t) { return t >= GgufType::Q2_K; }

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

// Element j in the low nibble and j + 16 in the high nibble of byte j.
void split_nibbles(const uint8_t* packed, uint8_t* codes) {
    for (int j = 0; j < kH; ++j) {
        codes[j] = packed[j] & 0x0F;
        codes[j + kH] = packed[j] >> 4;
    }
}

}  // namespace

int64_t gguf_block_elements(GgufType t) { return is_kquant(t) ? kquant::kq_block_elements(t) : kB; }

int64_t gguf_type_size(GgufType t) { return is_kquant(t) ? kquant::kq_block_bytes(t) : block_bytes(t); }

int64_t gguf_sub_block(GgufType t) { return is_kquant(t) ? kquant::kq_sub_block(t) : kB; }

bool gguf_has_min(GgufType t) { return t == GgufType::Q4_1 || (is_kquant(t) && kquant::kq_has_min(t)); }

int gguf_scales_per_block(GgufType t) {
    return static_cast<int>(gguf_block_elements(t) / gguf_sub_block(t)) * (gguf_has_min(t) ? 2 : 1);
}

bool gguf_uses_importance(GgufType t) { return t != GgufType::Q8_0 && t != GgufType::MXFP4; }

const float* gguf_log2_round_up_thresholds() {
    static const std::vector<float> t = make_log2_thresholds();
    return t.data();
}

int gguf_floor_log2f(float a) { return floor_log2f(a, gguf_log2_round_up_thresholds()); }

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance) {
    const int64_t E = gguf_block_elements(t), nb = rows * (cols / E), ts = gguf_type_size(t);
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (is_kquant(t)) {
        visit_kquant_type(t, [&](auto type) {
            parallel_ranges(nb, 4, 1, [&](int64_t b0, int64_t b1) {
                kquant_encode_range<decltype(type)::value>(x, blocks, b0, b1 - b0, cols / E, importance);
            });
        });
        return;
    }
    if (importance) {
        visit_weighted_type(t, [&](auto type) {
            parallel_ranges(rows, 1, 1, [&](int64_t r0, int64_t r1) {
                weighted_rows<decltype(type)::value>(x, cols, r0, r1, importance, blocks);
            });
        });
        return;
    }
    if (t == GgufType::Q4_0 && q4_0_avx2_available()) {  // same bytes, hand-vectorised (gguf_q4_0_avx2.h)
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) { quantize_q4_0_avx2(x + b0 * kB, blocks + b0 * ts, b1 - b0); });
        return;
    }
    const float* log2_thresholds = gguf_log2_round_up_thresholds();  // built before the threads start
    visit_gguf_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            quantize_blocks<decltype(type)::value>(x + b0 * kB, blocks + b0 * ts, b1 - b0, log2_thresholds);
        });
    });
}

void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y) {
    const int64_t E = gguf_block_elements(t), nb = rows * (cols / E), ts = gguf_type_size(t);
    if (is_kquant(t)) {
        visit_kquant_type(t, [&](auto type) {
            parallel_ranges(nb, 4096 / E, 1, [&](int64_t b0, int64_t b1) {
                kquant_decode_range<decltype(type)::value>(blocks + b0 * ts, y + b0 * E, b1 - b0);
            });
        });
        return;
    }
    visit_gguf_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            dequantize_blocks<decltype(type)::value>(blocks + b0 * ts, y + b0 * kB, b1 - b0);
        });
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance) {
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (is_kquant(t)) {
        const int64_t group = t == GgufType::IQ4_NL ? 8 : 1;
        const int64_t E = gguf_block_elements(t);
        const int64_t units = L.rows * (((L.cols + E - 1) / E + group - 1) / group);
        visit_kquant_type(t, [&](auto type) {
            parallel_ranges(units, 4, 1, [&](int64_t u0, int64_t u1) {
                kquant_fake_units<decltype(type)::value>(x, y, L, u0, u1, importance);
            });
        });
        return;
    }
    if (importance) {  // row by row: sigma2 is the (zero-padded) row's
        const int64_t n = (L.cols + kB - 1) / kB * kB;
        visit_weighted_type(t, [&](auto type) {
            constexpr GgufType T = decltype(type)::value;
            parallel_ranges(L.rows, 1, 1, [&](int64_t r0, int64_t r1) {
                std::vector<float> row(static_cast<size_t>(n)), qw(static_cast<size_t>(n), 0.0f), dec(static_cast<size_t>(n));
                std::vector<uint8_t> bytes(static_cast<size_t>(n / kB * block_bytes(T)));
                for (int64_t c = 0; c < L.cols; ++c) qw[c] = importance[c];
                for (int64_t r = r0; r < r1; ++r) {
                    const float* xr = x + r * L.cols;
                    for (int64_t c = 0; c < n; ++c) row[c] = c < L.cols ? xr[c] : 0.0f;
                    weighted_rows<T>(row.data(), n, 0, 1, qw.data(), bytes.data());
                    dequantize_blocks<T>(bytes.data(), dec.data(), n / kB);
                    float* yr = y + r * L.cols;
                    for (int64_t c = 0; c < L.cols; ++c) yr[c] = is_nan_bits(row[c]) ? row[c] : dec[c];
                }
            });
        });
        return;
    }
    const float* log2_thresholds = gguf_log2_round_up_thresholds();
    visit_gguf_type(t, [&](auto type) {
        constexpr GgufType T = decltype(type)::value;
        for_each_block(
            L, [&](int64_t, int64_t n, int64_t off) { fake_blocks<T>(x + off, y + off, n, log2_thresholds); },
            [&](int64_t, int64_t off, int64_t len) {
                float pad[kB] = {}, out[kB];
                for (int64_t i = 0; i < len; ++i) pad[i] = x[off + i];
                fake_quant_block<T>(pad, out, log2_thresholds);
                for (int64_t i = 0; i < len; ++i) y[off + i] = out[i];
            });
    });
}

void gguf_unpack(const uint8_t* blocks, int64_t nblocks, GgufType t, uint8_t* codes, float* scales) {
    const int64_t ts = gguf_type_size(t);
    if (is_kquant(t)) {
        const int E = kquant::kq_block_elements(t), sub = kquant::kq_sub_block(t), per = gguf_scales_per_block(t);
        const bool with_min = kquant::kq_has_min(t);
        for (int64_t b = 0; b < nblocks; ++b) {
            const uint8_t* in = blocks + b * ts;
            for (int e = 0; e < E; ++e) codes[b * E + e] = static_cast<uint8_t>(kquant::element_code(t, in, e));
            for (int j = 0; j < E / sub; ++j) {
                float s, m;
                kquant::sub_block_scale(t, in, j, &s, &m);
                if (with_min) {
                    scales[b * per + 2 * j] = s;
                    scales[b * per + 2 * j + 1] = m;
                } else {
                    scales[b * per + j] = s;
                }
            }
        }
        return;
    }
    for (int64_t b = 0; b < nblocks; ++b) {
        const uint8_t* in = blocks + b * ts;
        uint8_t* c = codes + b * kB;
        int q5[kB];
        switch (t) {
            case GgufType::Q8_0:
                scales[b] = load_fp16(in);
                for (int j = 0; j < kB; ++j) c[j] = in[2 + j];
                break;
            case GgufType::Q4_0:
                scales[b] = load_fp16(in);
                split_nibbles(in + 2, c);
                break;
            case GgufType::Q4_1:
                scales[2 * b] = load_fp16(in);
                scales[2 * b + 1] = load_fp16(in + 2);
                split_nibbles(in + 4, c);
                break;
            case GgufType::Q5_0:
                scales[b] = load_fp16(in);
                q5_0_codes(in, q5);
                for (int j = 0; j < kB; ++j) c[j] = static_cast<uint8_t>(q5[j]);
                break;
            case GgufType::MXFP4:
                // e = 255 only comes from the exponent wrap (all codes 0): 2^127 keeps it finite.
                scales[b] = pow2_any(std::min(127, static_cast<int>(in[0]) - 127));
                split_nibbles(in + 1, c);
                break;
            default: break;
        }
    }
}

GgufBlockFields gguf_block_fields(const uint8_t* y, GgufType t) {
    GgufBlockFields f;
    f.sub_blocks = static_cast<int>(gguf_block_elements(t) / gguf_sub_block(t));
    switch (t) {
        case GgufType::Q8_0:
        case GgufType::Q4_0:
        case GgufType::Q5_0:
        case GgufType::IQ4_NL: f.d = load_fp16(y); break;
        case GgufType::Q4_1:
            f.d = load_fp16(y);
            f.dmin = load_fp16(y + 2);
            break;
        case GgufType::MXFP4: f.d = pow2_any(std::min(127, static_cast<int>(y[0]) - 127)); break;
        case GgufType::Q2_K:
            f.d = load_fp16(y + 80);
            f.dmin = load_fp16(y + 82);
            f.scale_bits = 4;
            for (int j = 0; j < 16; ++j) {
                f.scales[j] = y[j] & 0xF;
                f.mins[j] = y[j] >> 4;
            }
            break;
        case GgufType::Q3_K:
            f.d = load_fp16(y + 108);
            f.scale_bits = 6;
            for (int j = 0; j < 16; ++j) f.scales[j] = kquant::get_q3_scale(j, y + 96) + 32;
            break;
        case GgufType::Q4_K:
        case GgufType::Q5_K:
            f.d = load_fp16(y);
            f.dmin = load_fp16(y + 2);
            f.scale_bits = 6;
            for (int j = 0; j < 8; ++j) kquant::get_scale_min_k4(j, y + 4, &f.scales[j], &f.mins[j]);
            break;
        case GgufType::Q6_K:
            f.d = load_fp16(y + 208);
            f.scale_bits = 8;
            for (int j = 0; j < 16; ++j) f.scales[j] = static_cast<int8_t>(y[192 + j]);
            break;
        case GgufType::IQ4_XS:
            f.d = load_fp16(y);
            f.scale_bits = 6;
            for (int j = 0; j < 8; ++j) f.scales[j] = kquant::get_iq4xs_scale(j, y);
            break;
    }
    return f;
}

}  // namespace ql::kernels
