// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF Q5_1 blocks (ggml-org/llama.cpp ggml/src/ggml-common.h block_q5_1, ggml-quants.c
// quantize_row_q5_1_ref / dequantize_row_q5_1): 32 elements in 24 bytes,
//   0: fp16 d = (max - min) / 31    2: fp16 m = min    4: u32 qh (bit j: the 5th bit of element j)
//   8: qs[16] (element j in the low nibble and j + 16 in the high nibble of byte j)
//   q = (uint8_t)((x - min) / d + 0.5), no clamp (as ggml: a q of 32 wraps to 0)      x = q d + m
// llama.cpp writes Q5_1 where a Q5_K tensor's rows are not a multiple of 256 (llama-quant.cpp
// tensor_type_fallback), so a Q5_K_M export of a model 192 wide needs it. Reference path only
// (no importance matrix); bytes equal ggml's (tests/kernels/gguf_q5_1_test.cpp and the ggml
// oracle in scripts/check-gguf-mixes).
#pragma once

#include <cstdint>

namespace ql::kernels {

constexpr int64_t kGgufQ5_1BlockBytes = 24;

// x: rows * cols floats, cols % 32 == 0; blocks: rows * cols / 32 * 24 bytes. Threaded.
void gguf_q5_1_quantize(const float* x, int64_t rows, int64_t cols, uint8_t* blocks);
void gguf_q5_1_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, float* y);

}  // namespace ql::kernels
