// SPDX-License-Identifier: GPL-3.0-or-later
// NF4 (QLoRA NormalFloat4) with blockwise absmax, as bitsandbytes 0.50 quantize_4bit does it
// (backends/default/ops.py), restated in FORMATS.md "NF4":
//   blocks of `block` (default 64) consecutive elements of the FLATTENED tensor; absmax per
//   block; s = clamp(x * (1 / max(absmax, 1e-38)), -1, 1); code = number of float32 midpoints
//   (c[i] + c[i+1]) / 2 below s (nearest value, an exact midpoint to the lower index);
//   value = NF4[code] * absmax. A short last block divides by max(absmax, 1e-38) instead and
//   stores that clamped absmax (bitsandbytes does both).
// Double quantization (QLoRA): offset = mean(absmax) in ATen's float32 summation order;
// absmax - offset quantized in blocks of 256 with bitsandbytes' signed 8-bit dynamic map
// (create_dynamic_map), nearest code as above.
// NaN elements stay NaN in fake quantization (code 0); absmax ignores NaN and +-Inf.
#pragma once

#include <cstdint>

namespace ql::kernels {

constexpr int64_t kNf4Block = 64;
constexpr int64_t kNf4DoubleQuantBlock = 256;

// The 16 NF4 values (bitsandbytes _NF4_QUANT_TABLE), ascending.
extern const float kNf4Codebook[16];
// bitsandbytes create_dynamic_map(signed=True): 256 float32 values, ascending.
extern const float kDynamicMapSigned[256];

// Decision thresholds (float32 midpoints) of the sorted codebooks: code(s) = number of
// thresholds t with s > t.
const float* nf4_thresholds();          // 15 values
const float* dynamic_map_thresholds();  // 255 values

// Nearest codebook index of s (already clamped to [-1, 1]) by the rules above. NaN -> 0.
int nf4_code_of(float s);
int dynamic_map_code_of(float s);

// x, y: n floats (y may equal x). absmax: ceil(n / block) floats.
void nf4_fake_quant(const float* x, float* y, int64_t n, int64_t block);
// codes: n bytes (0..15, unpacked).
void nf4_encode(const float* x, int64_t n, int64_t block, uint8_t* codes, float* absmax);
void nf4_decode(const uint8_t* codes, const float* absmax, int64_t n, int64_t block, float* y);

// Double quantization of nblocks absmax values. codes8: nblocks bytes; absmax2:
// ceil(nblocks / 256) floats; offset: one float.
void nf4_double_quant(const float* absmax, int64_t nblocks, uint8_t* codes8, float* absmax2, float* offset);
// absmax_out[i] = map[codes8[i]] * absmax2[i / 256] + offset.
void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks,
                        float* absmax_out);

// mean() of a float32 array summed in ATen's CPU order (see nf4.cpp).
float aten_float_mean(const float* x, int64_t n);

// Fake quantization with double-quantized statistics: codes from the exact absmax, values
// from the reconstructed absmax (what a QLoRA checkpoint decodes to).
void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block);

}  // namespace ql::kernels
