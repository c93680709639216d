// SPDX-License-Identifier: GPL-3.0-or-later
// Layouts of llama.cpp's i-quants and ternary types (ggml/src/ggml-common.h block_iq* / block_tq*;
// every block holds 256 elements), their decoders (ggml-quants.c dequantize_row_*), and each
// element's code and sub-block scale as QuantLab reports them:
//
//   type     bytes  layout (byte offsets)                                         element value
//   IQ2_XXS    66   d @0; per 32: 4 grid bytes + u32 (4 x 7 sign bits, 4-bit s)     d (0.5 + s) / 4 * g * sign
//   IQ2_XS     74   d @0; u16 per 8 (9-bit point, 7 sign bits) @2; s[16] nibbles @66 d (0.5 + s) / 4 * g * sign
//   IQ2_S      82   d @0; point low bytes @2; signs @34; point high bits @66; s @74   d (0.5 + s) / 4 * g * sign
//   IQ3_XXS    98   d @0; point per 4 @2; per 32 a u32 of 4 x 7 sign bits + s @66    d (0.5 + s) / 2 * g * sign
//   IQ3_S     110   d @0; point low @2; high bits @66; signs @74; s nibbles @106     d (1 + 2 s) * g * sign
//   IQ1_S      50   d @0; point low bytes @2; u16 per 32 @34 (3 x 3 high bits, 3-bit s, delta sign)
//                                                                                     d (2 s + 1) (g + delta)
//   IQ1_M      56   point low @0; per 16 one nibble of high bits + delta sign @32; 3-bit s and the
//                   fp16 d spread over the top nibbles of 4 u16 @48                    d (2 s + 1) (g + delta)
//   TQ1_0      54   5 trits per byte @0 (x 256 / 243 rounded up), 4 per byte @48, d @52   d (t - 1)
//   TQ2_0      66   2 bits per element @0, d @64                                       d (t - 1)
//
// g: the lattice coordinate (gguf_iquant_grids.h): IQ2 {8, 25, 43}, IQ3_XXS {4, 12, ..., 62},
// IQ3_S {1, 3, ..., 15}, IQ1 {-1, 0, 1}; delta = +-0.125. The "even" sign patterns of IQ2_XXS,
// IQ2_XS and IQ3_XXS store 7 bits per 8 values (ksigns_iq2xs restores the eighth as their parity).
//
// Codes (gguf_unpack): index of the element's signed level in iquant_code_values(t), whose value
// times the sub-block scale is the decoded value bit for bit. Sub-blocks: 32 elements (IQ2_XXS,
// IQ3_XXS, IQ3_S, IQ1_S), 16 (IQ2_XS, IQ2_S, IQ1_M), 256 (TQ1_0, TQ2_0).
#pragma once

#include <cstdint>

#include "kernels/gguf_blocks.h"
#include "kernels/gguf_iquant_grids.h"
#include "kernels/gguf_kquant_search.h"

namespace ql::kernels::iquant {

inline void put_u16(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v & 0xFF);
    p[1] = static_cast<uint8_t>((v >> 8) & 0xFF);
}
inline void put_u32(uint8_t* p, uint32_t v) {
    for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>((v >> (8 * k)) & 0xFF);
}
inline uint32_t get_u16(const uint8_t* p) { return static_cast<uint32_t>(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

constexpr bool is_iquant(GgufType t) { return t >= GgufType::IQ2_XXS && t <= GgufType::TQ2_0; }

constexpr int iq_block_bytes(GgufType t) {
    return t == GgufType::IQ2_XXS   ? 66
           : t == GgufType::IQ2_XS  ? 74
           : t == GgufType::IQ2_S   ? 82
           : t == GgufType::IQ3_XXS ? 98
           : t == GgufType::IQ3_S   ? 110
           : t == GgufType::IQ1_S   ? 50
           : t == GgufType::IQ1_M   ? 56
           : t == GgufType::TQ1_0   ? 54
                                    : 66;  // TQ2_0
}
constexpr int iq_sub_block(GgufType t) {
    return t == GgufType::IQ2_XS || t == GgufType::IQ2_S || t == GgufType::IQ1_M ? 16
           : t == GgufType::TQ1_0 || t == GgufType::TQ2_0                        ? 256
                                                                                 : 32;
}
// ggml_quantize_requires_imatrix.
constexpr bool iq_requires_importance(GgufType t) {
    return t == GgufType::IQ2_XXS || t == GgufType::IQ2_XS || t == GgufType::IQ1_S;
}

// The signed element levels codes index, ascending: IQ2 6 ({-43, -25, -8, 8, 25, 43}), IQ3 16,
// IQ1 6 ({-1.125, -0.875, -0.125, 0.125, 0.875, 1.125}), TQ1_0 3 ({-1, 0, 1}), TQ2_0 4 (its code 3,
// which the quantizer never writes, decodes to 2 as in ggml). Returns the count.
int iquant_code_values(GgufType t, const float** values);

// One block of 256: y -> out (ggml's dequantize_row_*), and per element the code and per
// sub-block the scale (see the top of this file).
void decode_iquant(GgufType t, const uint8_t* y, float* out);
void unpack_iquant(GgufType t, const uint8_t* y, uint8_t* codes, float* scales);
GgufBlockFields iquant_block_fields(GgufType t, const uint8_t* y);

}  // namespace ql::kernels::iquant
