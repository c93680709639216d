// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_block_codec.h"
#include "kernels/gguf_block_tiles.h"
#include "kernels/gguf_fake_avx2.h"
#include "kernels/gguf_iquant_codec.h"
#include "kernels/gguf_iquant_cpu.h"
#include "kernels/gguf_kquant_codec.h"
#include "kernels/gguf_kquant_cpu.h"
#include "kernels/gguf_min_avx2.h"
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

// The types whose per-block scalar work runs eight blocks at a time (gguf_block_tiles.h).
template <GgufType T>
constexpr bool kTiled = T == GgufType::Q8_0 || T == GgufType::Q4_0 || T == GgufType::Q5_0 || T == GgufType::Q4_1;

template <GgufType T>
QL_CPU_CLONES void quantize_blocks(const float* x, uint8_t* out, int64_t nblocks, const float* log2_thresholds) {
    int64_t b = 0;
    if constexpr (kTiled<T>)
        for (; b + gguf_tiles::kTile <= nblocks; b += gguf_tiles::kTile)
            gguf_tiles::encode_tile<T>(x + b * kB, out + b * block_bytes(T));
    for (; b < nblocks; ++b) encode_block<T>(x + b * kB, out + b * block_bytes(T), log2_thresholds);
}

template <GgufType T>
QL_CPU_CLONES void dequantize_blocks(const uint8_t* in, float* y, int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b) decode_block<T>(in + b * block_bytes(T), y + b * kB);
}

template <GgufType T>
QL_CPU_CLONES void fake_blocks(const float* x, float* y, int64_t nblocks, const float* log2_thresholds) {
    constexpr int kTile = gguf_tiles::kTile;
    alignas(32) float keep[kTile * kB];  // the input: y may alias x
    int64_t b = 0;
    if constexpr (kTiled<T>)
        for (; b + kTile <= nblocks; b += kTile) {
            std::memcpy(keep, x + b * kB, sizeof keep);
            gguf_tiles::fake_tile<T>(keep, y + b * kB);
        }
    for (; b < nblocks; ++b) {
        for (int i = 0; i < kB; ++i) keep[i] = x[b * kB + i];
        fake_quant_block<T>(keep, y + b * kB, log2_thresholds);
    }
}

bool is_kquant(GgufType t) { return t >= GgufType::Q2_K && t <= GgufType::IQ4_XS; }

// Element j in the low nibble and j + 16 in the high nibble of byte j.
void split_nibbles(const uint8_t* packed, uint8_t* codes) {
    for (int j = 0; j < kH; ++j) {
        codes[j] = packed[j] & 0x0F;
        codes[j + kH] = packed[j] >> 4;
    }
}

}  // namespace

int64_t gguf_block_elements(GgufType t) {
    return iquant::is_iquant(t) ? 256 : is_kquant(t) ? kquant::kq_block_elements(t) : kB;
}

int64_t gguf_type_size(GgufType t) {
    return iquant::is_iquant(t) ? iquant::iq_block_bytes(t) : is_kquant(t) ? kquant::kq_block_bytes(t) : block_bytes(t);
}

int64_t gguf_sub_block(GgufType t) {
    return iquant::is_iquant(t) ? iquant::iq_sub_block(t) : is_kquant(t) ? kquant::kq_sub_block(t) : kB;
}

bool gguf_has_min(GgufType t) { return t == GgufType::Q4_1 || (is_kquant(t) && kquant::kq_has_min(t)); }

int gguf_scales_per_block(GgufType t) {
    return static_cast<int>(gguf_block_elements(t) / gguf_sub_block(t)) * (gguf_has_min(t) ? 2 : 1);
}

bool gguf_uses_importance(GgufType t) {
    return t != GgufType::Q8_0 && t != GgufType::MXFP4 && t != GgufType::TQ1_0 && t != GgufType::TQ2_0;
}

bool gguf_requires_importance(GgufType t) { return iquant::iq_requires_importance(t); }

bool gguf_is_iquant(GgufType t) { return iquant::is_iquant(t); }

const float* gguf_log2_round_up_thresholds() {
    static const std::vector<float> t = make_log2_thresholds();
    return t.data();
}

int gguf_floor_log2f(float a) { return floor_log2f(a, gguf_log2_round_up_thresholds()); }

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance) {
    const int64_t E = gguf_block_elements(t), nb = rows * (cols / E), ts = gguf_type_size(t);
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (iquant::is_iquant(t)) return iquant_quantize_cpu(x, rows, cols, t, blocks, importance);
    if (is_kquant(t)) return kquant_quantize_cpu(x, rows, cols, t, blocks, importance);
    if (importance) return weighted_quantize_cpu(x, rows, cols, t, blocks, importance);
    if ((t == GgufType::Q4_0 || t == GgufType::Q5_0) && q4_0_avx2_available()) {  // same bytes, hand-vectorised (gguf_q4_0_avx2.h)
        const auto encode = t == GgufType::Q4_0 ? quantize_q4_0_avx2 : quantize_q5_0_avx2;
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) { encode(x + b0 * kB, blocks + b0 * ts, b1 - b0); });
        return;
    }
    if (t == GgufType::Q4_1 && gguf_min_avx2_available()) {  // same bytes, hand-vectorised (gguf_min_avx2.h)
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) { quantize_q4_1_avx2(x + b0 * kB, blocks + b0 * ts, b1 - b0); });
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
    if (iquant::is_iquant(t)) return iquant_dequantize_cpu(blocks, rows, cols, t, y);
    if (is_kquant(t)) return kquant_dequantize_cpu(blocks, rows, cols, t, y);
    visit_gguf_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            dequantize_blocks<decltype(type)::value>(blocks + b0 * ts, y + b0 * kB, b1 - b0);
        });
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance) {
    if (!gguf_uses_importance(t)) importance = nullptr;
    if (iquant::is_iquant(t)) return iquant_fake_quant_cpu(x, y, L, t, importance);
    if (is_kquant(t)) return kquant_fake_quant_cpu(x, y, L, t, importance);
    if (importance) return weighted_fake_quant_cpu(x, y, L, t, importance);
    const float* log2_thresholds = gguf_log2_round_up_thresholds();
    const bool avx2 = gguf_fake_avx2_handles(t) && gguf_fake_avx2_available();  // same values (gguf_fake_avx2.h)
    visit_gguf_type(t, [&](auto type) {
        constexpr GgufType T = decltype(type)::value;
        for_each_block(
            L,
            [&](int64_t, int64_t n, int64_t off) {
                if (avx2)
                    gguf_fake_quant_avx2(T, x + off, y + off, n, log2_thresholds);
                else
                    fake_blocks<T>(x + off, y + off, n, log2_thresholds);
            },
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
    if (iquant::is_iquant(t)) {
        const int per = gguf_scales_per_block(t);
        for (int64_t b = 0; b < nblocks; ++b) iquant::unpack_iquant(t, blocks + b * ts, codes + b * 256, scales + b * per);
        return;
    }
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
    if (iquant::is_iquant(t)) return iquant::iquant_block_fields(t, y);
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
        default: break;  // the i-quants: above
    }
    return f;
}

}  // namespace ql::kernels
