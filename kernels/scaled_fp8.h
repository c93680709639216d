// SPDX-License-Identifier: GPL-3.0-or-later
// FP8 (E4M3 / E5M2) with a float32 scale per tensor or per channel.
// FORMATS.md "FP8 per tensor": scale = amax / 448 (E5M2: / 57344); code = FP8(x / scale);
// value = FP8 value * scale -- Model Optimizer's export path (qtensor/fp8_tensor.py), so fake
// quantization equals what the exported checkpoint decodes to. amax = 0 gives scale 1.
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

enum class Fp8Kind : uint8_t { E4M3, E5M2 };

float fp8_max(Fp8Kind k);

// amax / max, or 1 when that is 0 (an all-zero tensor or channel).
float fp8_scale_for_amax(float amax, Fp8Kind k);

// scales: L.channels floats (> 0). y may equal x.
void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k);

// codes: one FP8 byte per element.
void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes);

void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y);

}  // namespace ql::kernels
