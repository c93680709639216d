// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_blocks.h"

#include <cmath>
#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_block_codec.h"
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

// Element j in the low nibble and j + 16 in the high nibble of byte j.
void split_nibbles(const uint8_t* packed, uint8_t* codes) {
    for (int j = 0; j < kH; ++j) {
        codes[j] = packed[j] & 0x0F;
        codes[j + kH] = packed[j] >> 4;
    }
}

}  // namespace

int64_t gguf_type_size(GgufType t) { return block_bytes(t); }

int gguf_scales_per_block(GgufType t) { return t == GgufType::Q4_1 ? 2 : 1; }

const float* gguf_log2_round_up_thresholds() {
    static const std::vector<float> t = make_log2_thresholds();
    return t.data();
}

int gguf_floor_log2f(float a) { return floor_log2f(a, gguf_log2_round_up_thresholds()); }

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks) {
    const int64_t nb = rows * (cols / kB), ts = gguf_type_size(t);
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
    const int64_t nb = rows * (cols / kB), ts = gguf_type_size(t);
    visit_gguf_type(t, [&](auto type) {
        parallel_ranges(nb, 1024, 1, [&](int64_t b0, int64_t b1) {
            dequantize_blocks<decltype(type)::value>(blocks + b0 * ts, y + b0 * kB, b1 - b0);
        });
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t) {
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
                scales[b] = pow2_any(static_cast<int>(in[0]) - 127);
                split_nibbles(in + 1, c);
                break;
        }
    }
}

}  // namespace ql::kernels
