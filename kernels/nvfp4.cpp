// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nvfp4.h"

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/minifloat.h"

namespace ql::kernels {
namespace {

// Per-block scale denominator float(s8) * g, and the E4M3 byte s8.
inline float block_denominator(float block_amax, float g, float six_g, uint8_t* s8_out) {
    float s = block_amax == 0.0f ? 1.0f : block_amax / six_g;
    if (s == 0.0f) s = 1.0f;
    const uint8_t s8 = static_cast<uint8_t>(encode_element<E4M3>(s));
    *s8_out = s8;
    return decode_element<E4M3>(s8) * g;
}

inline float block_amax_of(const float* x, int64_t len) {
    uint32_t m = 0;
    for (int64_t i = 0; i < len; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    return bits_float(m);
}

inline void fake_quant_block(const float* x, float* y, int64_t len, float g, float six_g) {
    uint8_t s8;
    const float d = block_denominator(block_amax_of(x, len), g, six_g, &s8);
    if (d == 0.0f) {
        for (int64_t i = 0; i < len; ++i) y[i] = is_nan_bits(x[i]) ? x[i] : 0.0f;
        return;
    }
    for (int64_t i = 0; i < len; ++i) {
        const float v = x[i];
        const float q = round_to_grid<E2M1>(abs_bits(v / d)) * d;
        y[i] = is_nan_bits(v) ? v : copy_sign_of(q, v);
    }
}

inline void encode_block(const float* x, uint8_t* codes, uint8_t* scale, int64_t len, float g,
                         float six_g) {
    const float d = block_denominator(block_amax_of(x, len), g, six_g, scale);
    for (int64_t i = 0; i < len; ++i) {
        const float v = x[i];
        unsigned c;
        if (is_nan_bits(v)) {
            c = E2M1::nan_code;
        } else if (d == 0.0f) {
            c = 0;
        } else {
            c = grid_code<E2M1>(round_to_grid<E2M1>(abs_bits(v / d))) | (v < 0.0f ? 8u : 0u);
        }
        codes[i] = static_cast<uint8_t>(c);
    }
}

inline void decode_block(const uint8_t* codes, uint8_t s8, float* y, int64_t len, float g) {
    const float d = decode_element<E4M3>(s8) * g;
    for (int64_t i = 0; i < len; ++i) y[i] = decode_element<E2M1>(codes[i]) * d;
}

// Whole blocks, in tiles: block amaxes as integer maxima of the magnitude bits (non-negative
// floats order like their bit patterns, and integer max vectorises), then the tile's scales,
// then the elements with a constant 16-wide inner loop.
QL_CPU_CLONES
void fake_quant_blocks(const float* __restrict x, float* __restrict y, int64_t nblocks, float g,
                       float six_g) {
    constexpr int64_t kTile = 64;
    float amax[kTile], denom[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * kNvfp4Block;
        float* yt = y + t0 * kNvfp4Block;
        for (int64_t b = 0; b < nt; ++b) amax[b] = block_amax_of(xt + b * kNvfp4Block, kNvfp4Block);
        // The tile's scales in one vectorised loop. For a positive finite s, decode(encode(s))
        // is exactly its grid value, so the E4M3 round trip is round_to_grid.
        for (int64_t b = 0; b < nt; ++b) {
            float s = amax[b] / six_g;
            s = (amax[b] == 0.0f || s == 0.0f) ? 1.0f : s;
            denom[b] = round_to_grid<E4M3>(s) * g;
        }
        for (int64_t b = 0; b < nt; ++b) {
            const float d = denom[b];
            const float* xb = xt + b * kNvfp4Block;
            float* yb = yt + b * kNvfp4Block;
            for (int i = 0; i < kNvfp4Block; ++i) {
                const float v = xb[i];
                const float q = round_to_grid<E2M1>(abs_bits(v / d)) * d;
                // d == 0 (the E4M3 scale underflowed): the block decodes to zeros.
                const float r = d == 0.0f ? 0.0f : copy_sign_of(q, v);
                yb[i] = is_nan_bits(v) ? v : r;
            }
        }
    }
}

QL_CPU_CLONES
void encode_blocks(const float* x, uint8_t* codes, uint8_t* scales, int64_t nblocks, float g,
                   float six_g) {
    for (int64_t b = 0; b < nblocks; ++b)
        encode_block(x + b * kNvfp4Block, codes + b * kNvfp4Block, scales + b, kNvfp4Block, g, six_g);
}

QL_CPU_CLONES
void decode_blocks(const uint8_t* codes, const uint8_t* scales, float* y, int64_t nblocks, float g) {
    for (int64_t b = 0; b < nblocks; ++b)
        decode_block(codes + b * kNvfp4Block, scales[b], y + b * kNvfp4Block, kNvfp4Block, g);
}

}  // namespace

float nvfp4_global_scale(float amax) { return amax / (6.0f * 448.0f); }

void nvfp4_fake_quant(const float* x, float* y, const RowBlocks& L, float g) {
    const float six_g = 6.0f * g;
    for_each_block(
        L, [&](int64_t, int64_t n, int64_t off) { fake_quant_blocks(x + off, y + off, n, g, six_g); },
        [&](int64_t, int64_t off, int64_t len) { fake_quant_block(x + off, y + off, len, g, six_g); });
}

void nvfp4_encode(const float* x, const RowBlocks& L, float g, uint8_t* codes, uint8_t* scales) {
    const float six_g = 6.0f * g;
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            encode_blocks(x + off, codes + off, scales + b0, n, g, six_g);
        },
        [&](int64_t b, int64_t off, int64_t len) {
            encode_block(x + off, codes + off, scales + b, len, g, six_g);
        });
}

void nvfp4_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, float g,
                  float* y) {
    for_each_block(
        L, [&](int64_t b0, int64_t n, int64_t off) { decode_blocks(codes + off, scales + b0, y + off, n, g); },
        [&](int64_t b, int64_t off, int64_t len) { decode_block(codes + off, scales[b], y + off, len, g); });
}

}  // namespace ql::kernels
