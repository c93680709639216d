// SPDX-License-Identifier: GPL-3.0-or-later
// Plain scalar transcriptions of ggml's K-quant and IQ4 quantizers (ggml/src/ggml-quants.c as
// vendored by llama-cpp-python 0.3.36; shared/design/GGUF_KQUANTS.md sections 1-4 and 8): one
// super-block at a time, the helper searches (make_qx_quants, make_q3_quants, make_qkx2_quants,
// make_qkx3_quants, make_qp_quants, best_index_int8) as separate functions with ggml's loops,
// float32 arithmetic in ggml's order. The fast CPU and CUDA kernels (gguf_kquant_codec.h) are
// tested against these bit for bit, and these against ggml itself (tests/peers).
#pragma once

#include <cstdint>
#include <vector>

namespace ql::kernels::reference {

enum class KQuant { Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS };

// Elements per block (256; IQ4_NL 32) and bytes per block (84, 110, 144, 176, 210, 18, 136).
int64_t kquant_block_elements(KQuant t);
int64_t kquant_block_bytes(KQuant t);

// x: rows * cols float32 (cols a multiple of the block). importance: empty, or cols floats (one
// per column, the same for every row, as ggml_quantize_chunk's imatrix). Returns the GGUF tensor
// bytes: what ggml_quantize_chunk(type, x, ..., importance or NULL) writes.
std::vector<uint8_t> kquant_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, KQuant t,
                                     const std::vector<float>& importance);

// The values ggml's dequantize_row_* computes from those bytes.
std::vector<float> kquant_dequantize(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, KQuant t);

}  // namespace ql::kernels::reference
