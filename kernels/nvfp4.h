// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4: E2M1 elements in blocks of 16 along the last dimension, one E4M3 scale per block and a
// float32 global scale. Numerics of Model Optimizer's exported checkpoint
// (qtensor/nvfp4_tensor.py), as restated in shared/design/FORMATS.md "NVFP4":
//   g = amax / (6 * 448);  s = block_amax / (6 * g), s = 1 where s == 0;  s8 = E4M3(s);
//   code = E2M1(x / (float(s8) * g));  value = E2M1[code] * (float(s8) * g).
// A block whose denominator float(s8) * g is zero dequantizes to zeros (Model Optimizer would
// divide by zero). Amax ignores NaN and +-Inf; a NaN stays NaN in fake quantization and gets
// code 7 (E2M1's NaN rule), +-Inf saturate to +-6 * scale. Sign: code bit 3 is set for x < 0,
// as Model Optimizer's _cast_fp4 does (so -0.0 encodes as 0).
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

constexpr int64_t kNvfp4Block = 16;

// weight_scale_2 / input_scale: amax / (6 * 448), float32.
float nvfp4_global_scale(float amax);

// x, y: rows*cols floats (y may equal x). L.block must be 16.
void nvfp4_fake_quant(const float* x, float* y, const RowBlocks& L, float global_scale);

// codes: rows*cols bytes, one E2M1 code (0..15) per element, unpacked.
// block_scales: rows*blocks_per_row bytes, E4M3 codes.
void nvfp4_encode(const float* x, const RowBlocks& L, float global_scale, uint8_t* codes,
                  uint8_t* block_scales);

void nvfp4_decode(const uint8_t* codes, const uint8_t* block_scales, const RowBlocks& L,
                  float global_scale, float* y);

}  // namespace ql::kernels
