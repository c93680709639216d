// SPDX-License-Identifier: GPL-3.0-or-later
// Pass-through baselines: FP32 (identity), BF16 and FP16 round trips (RNE; FP16 overflows to
// Inf as a real cast does). Used so that "no quantization" runs go through the same path.
#pragma once

#include <cstdint>

namespace ql::kernels {

enum class HalfKind : uint8_t { BF16, FP16 };

void half_round_trip(const float* x, float* y, int64_t n, HalfKind k);
// codes: n 16-bit words (the BF16 / FP16 bit patterns).
void half_encode(const float* x, int64_t n, HalfKind k, uint16_t* codes);
void half_decode(const uint16_t* codes, int64_t n, HalfKind k, float* y);

}  // namespace ql::kernels
