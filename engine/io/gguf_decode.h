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

// The block scales a tensor's bytes store, decoded to float32, one per block in file order:
// d of Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1, MXFP4's 2^(e-127); empty for F32 / F16 / BF16 and for
// types whose scales this build cannot read. `numel` elements (a multiple of the block).
std::vector<float> gguf_block_scales(const uint8_t* data, GgmlType type, int64_t numel);

}  // namespace ql
