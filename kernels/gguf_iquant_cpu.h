// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU drivers of the i-quants and ternary types (gguf_iquant_encode.h, gguf_iquant_codec.h),
// threaded over the OpenMP pool, one super-block per work item. Internal to kernels/:
// gguf_blocks.cpp dispatches here, with gguf_blocks.h's contracts. Non-finite input: the searches
// see NaN and +-Inf as 0; TQ1_0 / TQ2_0 then give +-Inf the trit +-1 (saturation, as the other
// GGUF formats), the lattice types keep what 0 chose; fake quantization keeps NaN.
#pragma once

#include <cstdint>

#include "kernels/gguf_blocks.h"

namespace ql::kernels {

// t: IQ2_XXS .. TQ2_0. importance: cols floats, or nullptr (std::invalid_argument for the types
// that require it: gguf_requires_importance).
void iquant_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance);
void iquant_dequantize_cpu(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y);
void iquant_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance);

}  // namespace ql::kernels
