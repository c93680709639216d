// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF block formats of ggml/llama.cpp: Q8_0, Q4_0, Q4_1, Q5_0 and MXFP4, blocks of 32 along
// each row, byte for byte as ggml `quantize_row_*_ref` and gguf-py `gguf/quants.py` write them
// (FORMATS.md "GGUF blocks", EXPORT.md section 2):
//   Q8_0  34 B: fp16 d = amax/127; q = roundf(x / d) (half away from zero)        x = q d
//   Q4_0  18 B: fp16 d = max/-8 (max = the element of largest |x|, signed);
//               q = min(15, trunc(fma(x, 1/d, 8.5)))                              x = (q-8) d
//   Q4_1  20 B: fp16 d = (max-min)/15, fp16 m = min; q = trunc((x-min)/d + 0.5)   x = q d + m
//   Q5_0  22 B: fp16 d = max/-16; q = min(31, trunc(fma(x, 1/d, 16.5))); 4 bytes of high bits
//   MXFP4 17 B: E8M0 e = floor(log2f(amax)) - 2 + 127; nearest of d * {0,1,2,3,4,6,8,12} with
//               d = 2^(e-128), ties toward the smaller magnitude.
// 4-bit codes: element j in the low nibble and j+16 in the high nibble of byte j.
// Non-finite input: NaN/Inf are ignored by the block statistics, NaN stays NaN in fake
// quantization (code of zero), +-Inf saturate.
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

constexpr int64_t kGgufBlock = 32;

enum class GgufType : uint8_t { Q8_0, Q4_0, Q4_1, Q5_0, MXFP4 };

// Bytes per 32-element block: 34, 18, 20, 22, 17.
int64_t gguf_type_size(GgufType t);
// Scale values per block in gguf_unpack: 2 for Q4_1 (d, m), else 1.
int gguf_scales_per_block(GgufType t);

// x: rows*cols floats with cols % 32 == 0. blocks: rows * (cols/32) * type_size bytes.
void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks);
void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y);

// Quantize + dequantize; a row tail shorter than 32 is padded with zeros (which, unlike for
// absmax formats, can move Q4_1's min/max: that is what padding means here).
void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t);

// Per-element codes (32 bytes per block: Q8_0 int8 q as a byte, Q4_0/Q4_1 0..15, Q5_0 0..31,
// MXFP4 index into {0,1,2,3,4,6,8,12,0,-1,-2,-3,-4,-6,-8,-12}) and per-block scales as float32
// (Q8_0/Q4_0/Q5_0: d; Q4_1: d then m; MXFP4: the E8M0 scale 2^(e-127) of the E2M1 values).
void gguf_unpack(const uint8_t* blocks, int64_t nblocks, GgufType t, uint8_t* codes, float* scales);

// floor(log2f(a)) for finite a > 0, as a correctly rounded log2f would give it (exact and the
// same on every machine and on CUDA: a per-binade threshold table, see gguf_blocks.cpp).
int gguf_floor_log2f(float a);
// The table behind it: for binade k (2^k <= a < 2^(k+1), k = -149..127) the smallest float whose
// log2 rounds up to k + 1 (or +Inf when none does); 277 entries, index k + 149.
const float* gguf_log2_round_up_thresholds();

}  // namespace ql::kernels
