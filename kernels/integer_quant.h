// SPDX-License-Identifier: GPL-3.0-or-later
// Uniform integer quantization (INT8/INT4/INT3/INT2), symmetric or asymmetric, with one scale
// per tensor, per channel or per group. FORMATS.md "Integers":
//   symmetric:  qmax = 2^(b-1) - 1; scale = amax / qmax; q = clamp(rne(x / scale), -qmax, qmax);
//               value = q * scale  (the INT4 AWQ export layout: scale = amax / 7)
//   asymmetric: scale = max((max(mx,0) - min(mn,0)) / (2^b - 1), 2^-126);
//               zp = clamp(-rne(min(mn,0) / scale), 0, 2^b - 1);
//               q = clamp(rne(x * (1 / scale)) + zp, 0, 2^b - 1); value = (q - zp) * scale
//               (torchao's MappingType.ASYMMETRIC).
// amax = 0 (symmetric) gives scale 0 and zeros. NaN stays NaN in fake quantization (its code is
// 0, or the zero point); +-Inf saturate.
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

struct IntFormat {
    int bits = 8;             // 2..8
    bool asymmetric = false;
};

struct IntParams {
    float scale = 0.0f;
    float zero_point = 0.0f;  // integer-valued; 0 for symmetric
};

// Parameters for a range. Symmetric uses amax = max(-lo, hi) of the finite range [lo, hi]
// with lo <= 0 <= hi; asymmetric uses the range itself.
IntParams int_params_for_range(float lo, float hi, IntFormat f);

// Per tensor / per channel: params has L.channels entries. Codes are one byte per element:
// two's complement for symmetric, unsigned for asymmetric.
void int_fake_quant_channels(const float* x, float* y, const ChannelLayout& L, const IntParams* params,
                             IntFormat f);
void int_encode_channels(const float* x, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         uint8_t* codes);
void int_decode_channels(const uint8_t* codes, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         float* y);

// Per group of L.block contiguous elements along rows; params: rows * blocks_per_row entries,
// computed inside the same pass.
void int_fake_quant_groups(const float* x, float* y, const RowBlocks& L, IntFormat f);
void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params);
void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f,
                       float* y);

}  // namespace ql::kernels
