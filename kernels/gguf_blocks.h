// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF block formats of ggml/llama.cpp, byte for byte as ggml_quantize_chunk writes them
// (llama-quantize's path; FORMATS.md "GGUF blocks", EXPORT.md section 2,
// shared/design/GGUF_KQUANTS.md for the K-quants and IQ4):
// Blocks of 32 along each row (gguf_block_codec.h):
//   Q8_0  34 B: fp16 d = amax/127; q = roundf(x / d) (half away from zero)        x = q d
//   Q4_0  18 B: fp16 d = max/-8 (max = the element of largest |x|, signed);
//               q = min(15, trunc(x * (1/d) + 8.5)), two float32 roundings        x = (q-8) d
//   Q4_1  20 B: fp16 d = (max-min)/15, fp16 m = min; q = trunc((x-min)/d + 0.5)   x = q d + m
//   Q5_0  22 B: fp16 d = max/-16; q = min(31, trunc(x * (1/d) + 16.5)); 4 bytes of high bits
//   MXFP4 17 B: E8M0 e = floor(log2f(amax)) - 2 + 127 (as a byte: below 2^-125 it wraps, as in
//               ggml); nearest of d * {0,1,2,3,4,6,8,12} with d = 2^(e-128), ties toward the
//               smaller magnitude.
//   Q4_0 / Q5_0 blocks whose 1/d overflows (amax below ~2^-125) get code 0, as ggml's casts do.
// Super-blocks of 256 (gguf_kquant_codec.h, searches in gguf_kquant_search.h):
//   Q2_K 84 B, Q3_K 110 B, Q4_K 144 B, Q5_K 176 B, Q6_K 210 B: 16 or 8 sub-blocks with 4- or
//   6-bit scales (and mins) under an fp16 super scale (and min); IQ4_XS 136 B: 8 sub-blocks of
//   kvalues_iq4nl with 6-bit scales; IQ4_NL 18 B per 32: fp16 d and kvalues_iq4nl indices.
// Super-blocks of 256 on lattices (gguf_iquant_codec.h has the layouts, gguf_iquant_encode.h the
// searches): IQ2_XXS 66 B, IQ2_XS 74 B, IQ2_S 82 B (8-dimensional lattices of 256 / 512 / 1024
// points with 4-bit sub-block scales), IQ3_XXS 98 B, IQ3_S 110 B (4-dimensional, 256 / 512
// points), IQ1_S 50 B, IQ1_M 56 B (2048 points of {-1, 0, 1}^8 shifted by +-1/8); ternary
// TQ1_0 54 B and TQ2_0 66 B (trits of x / amax under an fp16 amax).
// 4-bit codes of a 32-block: element j in the low nibble and j+16 in the high nibble of byte j.
// Non-finite input: NaN/Inf are ignored by the block statistics (searches see them as 0), NaN
// stays NaN in fake quantization, +-Inf saturate.
//
// Importance (ggml's quant_weights / imatrix): cols floats, one per column, shared by every row,
// finite and >= 0; nullptr for the plain reference search. Q8_0 and MXFP4 ignore it, as ggml does.
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

constexpr int64_t kGgufBlock = 32;

enum class GgufType : uint8_t {
    Q8_0, Q4_0, Q4_1, Q5_0, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
    IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0
};

// Elements per block: 32 (Q8_0, Q4_0, Q4_1, Q5_0, MXFP4, IQ4_NL) or 256 (the K-quants, IQ4_XS, the
// i-quants and ternary types).
int64_t gguf_block_elements(GgufType t);
// Bytes per block: 34, 18, 20, 22, 17, 84, 110, 144, 176, 210, 18, 136, 66, 74, 82, 98, 110, 50, 56,
// 54, 66.
int64_t gguf_type_size(GgufType t);
// Elements per stored scale (the sub-block): 16 for Q2_K, Q3_K, Q6_K, IQ2_XS, IQ2_S, IQ1_M; 256
// for TQ1_0, TQ2_0; 32 otherwise.
int64_t gguf_sub_block(GgufType t);
// Whether each scale comes with a minimum (Q4_1, Q2_K, Q4_K, Q5_K).
bool gguf_has_min(GgufType t);
// Scale values per block in gguf_unpack: sub-blocks per block, times 2 with a minimum.
int gguf_scales_per_block(GgufType t);
// Whether ggml's quantizer of this type reads importance (all but Q8_0, MXFP4, TQ1_0, TQ2_0).
bool gguf_uses_importance(GgufType t);
// ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S have no search without importance; the
// functions below throw std::invalid_argument when they get none for these.
bool gguf_requires_importance(GgufType t);
// The i-quants and ternary types (IQ2_XXS .. TQ2_0): CPU kernels only.
bool gguf_is_iquant(GgufType t);

// x: rows*cols floats with cols % gguf_block_elements(t) == 0. blocks: rows * (cols / block) *
// type_size bytes. importance: nullptr or cols floats (see the top of this file).
void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks,
                   const float* importance = nullptr);
void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y);

// Quantize + dequantize; L.block must be gguf_block_elements(t). A row tail shorter than a block
// is padded with zeros (which, unlike for absmax formats, can move a minimum or a search: that is
// what padding means here) and with importance 0; the importance (nullptr or L.cols floats)
// applies to every row.
void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance = nullptr);

// Per-element codes (block_elements bytes per block) and per-sub-block scales as float32
// (scales_per_block per block):
//   Q8_0 int8 q as a byte, scale d;  Q4_0 0..15 / Q5_0 0..31 (value (q - 8 | 16) d), scale d;
//   Q4_1 0..15, scales (d, m) with value q d + m;  MXFP4 index into
//   {0,1,2,3,4,6,8,12,0,-1,-2,-3,-4,-6,-8,-12} with the E8M0 scale 2^(e-127) of the E2M1 values;
//   Q2_K 0..3, Q4_K 0..15, Q5_K 0..31 with (scale, min) per sub-block, value scale q - min;
//   Q3_K 0..7, value scale (q - 4);  Q6_K 0..63, value scale (q - 32);
//   IQ4_NL / IQ4_XS 0..15, value scale kvalues_iq4nl[q];
//   i-quants / ternary: index into the type's signed levels (gguf_iquant_codec.h), value scale
//   level: IQ2 {-43, -25, -8, 8, 25, 43}, IQ3_XXS {-62, ..., -4, 4, ..., 62}, IQ3_S {-15, -13, ...,
//   15}, IQ1 {-1.125, -0.875, -0.125, 0.125, 0.875, 1.125}, TQ {-1, 0, 1}; the scale of a sub-block
//   is the one its dequantizer multiplies by (e.g. IQ2: d (0.5 + s) / 4).
// Every decoded value equals the dequantized one bit for bit (the same float32 products).
void gguf_unpack(const uint8_t* blocks, int64_t nblocks, GgufType t, uint8_t* codes, float* scales);

// The stored fields of one block, as integers (what the Format Explorer shows of a super-block).
struct GgufBlockFields {
    float d = 0, dmin = 0;      // the fp16 super scale and super min (dmin: Q2_K, Q4_K, Q5_K; Q4_1: m)
    int sub_blocks = 0;         // 1 (32-blocks), 8 or 16
    int scale_bits = 0;         // bits of each stored sub-block scale (4 Q2_K, IQ2, IQ3; 6 Q3_K/Q4_K/Q5_K/IQ4_XS; 8 Q6_K; 3 IQ1)
    int scales[16] = {};        // stored sub-block scale integers (Q3_K, IQ4_XS: 0..63 standing for s - 32; Q6_K int8)
    int mins[16] = {};          // stored sub-block min integers (Q2_K, Q4_K, Q5_K)
};
GgufBlockFields gguf_block_fields(const uint8_t* block, GgufType t);

// floor(log2f(a)) for finite a > 0, as a correctly rounded log2f would give it (exact and the
// same on every machine and on CUDA: a per-binade threshold table, see gguf_blocks.cpp).
int gguf_floor_log2f(float a);
// The table behind it: for binade k (2^k <= a < 2^(k+1), k = -149..127) the smallest float whose
// log2 rounds up to k + 1 (or +Inf when none does); 277 entries, index k + 149.
const float* gguf_log2_round_up_thresholds();

}  // namespace ql::kernels
