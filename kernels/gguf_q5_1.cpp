// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_q5_1.h"

#include <cfloat>
#include <cstring>

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

}  // namespace

void gguf_q5_1_quantize(const float* x, int64_t rows, int64_t cols, uint8_t* blocks) {
    const int64_t nblocks = rows * (cols / kQk);
    parallel_ranges(nblocks, 4096, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) encode_block(x + k * kQk, blocks + k * kGgufQ5_1BlockBytes);
    });
}

void gguf_q5_1_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, float* y) {
    const int64_t nblocks = rows * (cols / kQk);
    parallel_ranges(nblocks, 4096, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) decode_block(blocks + k * kGgufQ5_1BlockBytes, y + k * kQk);
    });
}

}  // namespace ql::kernels
