// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 with E5M3 block scales ("NVFP4_E5M3", AutoRound's data type nvfp4_v2): E2M1 elements in
// blocks of 16 along the last dimension, one unsigned E5M3 scale byte per block, no global scale.
// The wider scale (5 exponent bits, bias 15, max 114688) covers a tensor's whole range by itself,
// so no per-tensor amax has to be known (activations quantize dynamically, block by block).
// Numerics of intel/auto-round 0.16.1 auto_round/data_type/nvfp.py (ref_fp4_quant with
// global_scale 1, float_to_e5m3_frexp, e5m3_to_float_tensor):
//   s = block_amax * float(1/6);  d = UE5M3(s) (round half to even onto the UE5M3 grid, saturating
//   at 114688, subnormals down to 2^-17, underflow to 0);  code = E2M1(x / d) (round half to
//   even, saturating at 6);  value = E2M1[code] * d;  d == 0 -> the block decodes to zeros.
// UE5M3: exponent bias 15, 3 mantissa bits, no sign; byte 0xFE = 1.75 * 2^16 = 114688 is the
// largest, 0xFF is NaN (never produced here).
// Differences from AutoRound, on purpose (QuantLab's rule for every format): the block amax
// ignores NaN and +-Inf; a NaN element stays NaN (code 7 when encoded) and +-Inf saturate to
// +-6 * d. AutoRound lets a NaN or Inf decide its whole block (a NaN amax encodes the NaN scale).
// (AutoRound's git history also has an older encoder whose mantissa never carried into the next
// power of two; 0.16.1, the version the peer test pins, rounds to nearest as here.)
#pragma once

#include <cstdint>

#include "kernels/minifloat.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels {

constexpr int64_t kNvfp4E5m3Block = 16;

// The unsigned block-scale format: round_to_grid<UE5M3> and grid_code<UE5M3> (minifloat.h) round
// and encode it; its decoder is ue5m3_decode (decode_element's E5 rule, Inf at exponent 31, is
// E5M2's, not this format's).
using UE5M3 = Minifloat<5, 3, 15, 0xFE, 0xFF, false>;  // max 114688 (0xFE), NaN 0xFF
constexpr float kUe5m3Max = 114688.0f;

// The scale byte of s >= 0 (not NaN), rounded half to even and saturating; and a byte's value
// (0xFF: NaN).
uint8_t ue5m3_encode(float s);
float ue5m3_decode(uint8_t code);

// The block's denominator d = UE5M3(block_amax * float(1/6)) from its finite amax; the scale
// byte goes to *byte when byte is not null.
float nvfp4_e5m3_denominator(float block_amax, uint8_t* byte = nullptr);

// x, y: rows*cols floats (y may equal x). L.block must be 16.
void nvfp4_e5m3_fake_quant(const float* x, float* y, const RowBlocks& L);

// codes: rows*cols bytes, one E2M1 code (0..15) per element, unpacked (NVFP4's element codes).
// block_scales: L.block_count() bytes, UE5M3 codes.
void nvfp4_e5m3_encode(const float* x, const RowBlocks& L, uint8_t* codes, uint8_t* block_scales);
void nvfp4_e5m3_decode(const uint8_t* codes, const uint8_t* block_scales, const RowBlocks& L, float* y);

}  // namespace ql::kernels
