// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU drivers of the K-quant / IQ4 types and of the importance paths of Q4_0 / Q4_1 / Q5_0
// (gguf_kquant_codec.h, gguf_importance_codec.h), threaded over the OpenMP pool. Internal to
// kernels/: gguf_blocks.cpp dispatches here, with gguf_blocks.h's contracts.
#pragma once

#include <cstdint>

#include "kernels/gguf_blocks.h"

namespace ql::kernels {

// t: Q2_K .. IQ4_XS.
void kquant_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance);
void kquant_dequantize_cpu(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y);
void kquant_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance);

// t: Q4_0, Q4_1, Q5_0; importance not null.
void weighted_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance);
void weighted_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance);

}  // namespace ql::kernels
