// SPDX-License-Identifier: GPL-3.0-or-later
// OCP Microscaling formats: blocks of 32 along the last dimension sharing one E8M0 scale.
// shared/design/FORMATS.md "OCP Microscaling"; source followed: pytorch/ao
// prototype/mx_formats/mx_tensor.py (to_mx, FLOOR and RCEIL scale modes).
//   scale byte = clamp(floor(log2(block_amax)) - emax_elem, -127, 127) + 127   (floor rule)
//   element = RNE_saturate(x * 2^(127 - byte))      value = element * 2^(byte - 127)
// MXINT8: k = clamp(rne(64 * x * 2^(127 - byte)), -127, 127), value k / 64 * 2^(byte - 127).
// A block holding NaN or +-Inf gets scale 0xFF (NaN) and decodes to NaN entirely; its element
// codes are the element format's NaN code (FP8 0x7F, FP6/FP4 +max, INT8 0).
#pragma once

#include <cstdint>

#include "kernels/microscaling.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels {

constexpr int64_t kMxBlock = 32;

enum class MxElement : uint8_t { E4M3, E5M2, E3M2, E2M3, E2M1, Int8 };

// emax of the element format: exponent of its largest power of two (8, 15, 4, 2, 2, 0).
int mx_emax(MxElement e);
// Largest element magnitude (448, 57344, 28, 7.5, 6, 127/64).
float mx_max_element(MxElement e);
// Bits per element code (8, 8, 6, 6, 4, 8).
int mx_element_bits(MxElement e);

// x, y: rows*cols floats (y may equal x). L.block is the MX block size (32 in the standard).
void mx_fake_quant(const float* x, float* y, const RowBlocks& L, MxElement e, MxScaleRule rule);

// codes: rows*cols bytes (the element code in the low bits; MXINT8 as a two's complement
// byte). scales: rows*blocks_per_row E8M0 bytes.
void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes,
               uint8_t* scales);

void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e,
               float* y);

}  // namespace ql::kernels
