// SPDX-License-Identifier: GPL-3.0-or-later
// float32 rows -> the bytes of one GGUF tensor (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M, TQ1_0, TQ2_0), with QuantLab's kernels
// (kernels/gguf_blocks.h, kernels/gguf_q5_1.h: byte-exact with ggml_quantize_chunk, llama-quantize's
// quantizer, with or without an importance matrix; threaded over the OpenMP pool). Plain C++, no
// LibTorch. This is the entry point for writers of GGUF type mixes: one call per tensor (or per
// expert slice), any type per tensor. The inverse is engine/io/gguf_decode.h.
#pragma once

#include <cstdint>

#include "engine/io/gguf_file.h"

namespace ql {

// x: rows * cols float32, row-major (a GGUF tensor with ne = {cols, rows, ...}); cols a multiple
// of the type's block (ggml_block_size). out: ggml_tensor_bytes(type, {cols, rows}) bytes. F16
// and BF16 round to nearest even (as ggml's and numpy's conversions do).
// importance: nullptr (ggml's reference search, what llama-quantize does without --imatrix) or
// cols floats, finite and >= 0, shared by every row: llama-quantize's per-column imatrix values
// (in_sum2 / count of the tensor's entry; for a 3-D expert tensor call once per expert slice with
// that expert's values), exactly what ggml_quantize_chunk takes. F32, F16, BF16, Q8_0, MXFP4, TQ1_0
// and TQ2_0 ignore it, as ggml does; IQ2_XXS, IQ2_XS and IQ1_S need it (UserError without:
// ggml_quantize_requires_imatrix). Throws std::invalid_argument when cols is not a multiple of the block.
void encode_gguf_tensor(const float* x, int64_t rows, int64_t cols, GgmlType type, uint8_t* out,
                        const float* importance = nullptr);

}  // namespace ql
