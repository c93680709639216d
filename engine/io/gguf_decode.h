// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes of one GGUF tensor -> float32 (the inverse of engine/export/gguf_encode.h), with
// QuantLab's kernels: every type ggml_type_from_id knows that has a decoder. Plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"

namespace ql {

// True when decode_gguf_tensor can decode `type`.
bool gguf_type_decodable(GgmlType type);

// data: ggml_tensor_bytes(type, {cols, rows}) bytes; out: rows * cols floats, row-major. UserError
// naming `what` (the file and tensor) for a type without a decoder.
void decode_gguf_tensor(const uint8_t* data, int64_t rows, int64_t cols, GgmlType type, float* out,
                        const std::string& what);

// The scales a tensor's bytes store, decoded to float32, in file order: one per block for the
// 32-blocks (d of Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL, MXFP4's 2^(e-127)), one per
// sub-block for the K-quants and IQ4_XS (the sub-block's effective scale d * sc, minimums left
// out; kernels/gguf_blocks.h gguf_unpack); empty for F32 / F16 / BF16. `numel` elements (a
// multiple of the block).
std::vector<float> gguf_block_scales(const uint8_t* data, GgmlType type, int64_t numel);

}  // namespace ql
