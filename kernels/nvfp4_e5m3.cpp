// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nvfp4_e5m3.h"

#include <cmath>

#include "kernels/block_iteration.h"
#include "kernels/block_magnitude_max.h"
#include "kernels/nvfp4_block.h"

namespace ql::kernels {
namespace {

// AutoRound multiplies the float32 amax by get_reciprocal(6.0), a Python float that torch
// applies in float32.
constexpr float kOneSixth = static_cast<float>(1.0 / 6.0);

void fake_quant_block(const float* x, float* y, int64_t len) {
    const float d = nvfp4_e5m3_denominator(statistic_of<FiniteAbsmax>(x, len).value(), nullptr);
    for (int64_t i = 0; i < len; ++i) y[i] = nvfp4_fake_element(x[i], d);
}

void encode_block(const float* x, uint8_t* codes, uint8_t* scale, int64_t len) {
    const float d = nvfp4_e5m3_denominator(statistic_of<FiniteAbsmax>(x, len).value(), scale);
    for (int64_t i = 0; i < len; ++i) codes[i] = nvfp4_code_element(x[i], d);
}

void decode_block(const uint8_t* codes, uint8_t scale, float* y, int64_t len) {
    const float d = ue5m3_decode(scale);
    for (int64_t i = 0; i < len; ++i) y[i] = nvfp4_decode_element(codes[i], d);
}

}  // namespace

float nvfp4_e5m3_denominator(float amax, uint8_t* byte) {
    const float d = round_to_grid<UE5M3>(amax * kOneSixth);
    if (byte) *byte = static_cast<uint8_t>(grid_code<UE5M3>(d));
    return d;
}

uint8_t ue5m3_encode(float s) { return static_cast<uint8_t>(grid_code<UE5M3>(round_to_grid<UE5M3>(s))); }

float ue5m3_decode(uint8_t code) {
    if (code == 0xFF) return std::nanf("");
    const unsigned e = code >> 3, m = code & 0x07u;
    if (e == 0) return static_cast<float>(m) * 0x1p-17f;
    return std::ldexp(static_cast<float>(8u + m), static_cast<int>(e) - 15 - 3);
}

void nvfp4_e5m3_fake_quant(const float* x, float* y, const RowBlocks& L) {
    for_each_block_singly(L, [&](int64_t, int64_t off, int64_t len) { fake_quant_block(x + off, y + off, len); });
}

void nvfp4_e5m3_encode(const float* x, const RowBlocks& L, uint8_t* codes, uint8_t* scales) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) { encode_block(x + off, codes + off, scales + b, len); });
}

void nvfp4_e5m3_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, float* y) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) { decode_block(codes + off, scales[b], y + off, len); });
}

}  // namespace ql::kernels
