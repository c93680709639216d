// SPDX-License-Identifier: GPL-3.0-or-later
// float32 rows -> the bytes of one GGUF tensor (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4), with
// QuantLab's kernels (kernels/gguf_blocks.h: byte-exact with ggml's quantize_row_*_ref; threaded
// over the OpenMP pool). Plain C++, no LibTorch.
#pragma once

#include <cstdint>

#include "engine/io/gguf_file.h"

namespace ql {

// x: rows * cols float32, row-major (a GGUF tensor with ne = {cols, rows, ...}); cols a multiple
// of the type's block. out: ggml_tensor_bytes(type, {cols, rows}) bytes. F16 rounds to nearest
// even (as ggml's and numpy's conversions do). UserError for a type this build cannot write.
void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out);
// The same with an importance vector (an imatrix entry, llama-quantize's quant_weights): `n`
// values, cols of them, or cols per matrix of a 3-D tensor (rows / (n / cols) rows each). Null
// = the plain search. Types whose llama.cpp quantizer ignores the importance (F32, F16, BF16,
// Q8_0, MXFP4) ignore it here too; UserError for a type this build cannot quantize with one.
void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out,
                        const float* importance, int64_t n);

}  // namespace ql
