// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF Q5_1 blocks (ggml-org/llama.cpp ggml/src/ggml-common.h block_q5_1, ggml-quants.c
// quantize_row_q5_1_ref / dequantize_row_q5_1): 32 elements in 24 bytes,
//   0: fp16 d = (max - min) / 31    2: fp16 m = min    4: u32 qh (bit j: the 5th bit of element j)
//   8: qs[16] (element j in the low nibble and j + 16 in the high nibble of byte j)
//   q = (uint8_t)((x - min) / d + 0.5), no clamp (as ggml: a q of 32 wraps to 0)      x = q d + m
// llama.cpp writes Q5_1 where a Q5_K tensor's rows are not a multiple of 256 (llama-quant.cpp
// tensor_type_fallback), so a Q5_K_M export of a model 192 wide needs it; and Q5_0 files with an
// imatrix get Q5_1 ffn_down tensors. With an importance matrix: ggml's quantize_row_q5_1_impl
// (weights qw * sqrt(sigma2 + x^2), sigma2 the row's mean square, make_qkx3_quants(32, 31,
// -0.9, 0.05, 36) per block), on the K-quant searches of gguf_kquant_search.h. Bytes equal
// ggml's (tests/peers/ggml_oracle_test.cpp GgmlOracle.Q5_1MatchesGgmlQuantizeChunkByteForByte, scripts/check-gguf-mixes).
#pragma once

#include <cstdint>

namespace ql::kernels {

constexpr int64_t kGgufQ5_1BlockBytes = 24;

// x: rows * cols floats, cols % 32 == 0; blocks: rows * cols / 32 * 24 bytes. importance: null
// (quantize_row_q5_1_ref) or cols floats shared by every row. Threaded over rows.
void gguf_q5_1_quantize(const float* x, int64_t rows, int64_t cols, uint8_t* blocks, const float* importance = nullptr);
void gguf_q5_1_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, float* y);

}  // namespace ql::kernels
