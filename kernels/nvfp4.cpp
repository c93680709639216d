// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nvfp4.h"

#include "kernels/block_iteration.h"
#include "kernels/block_magnitude_max.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/nvfp4_block.h"

namespace ql::kernels {
namespace {

QL_INLINE float block_amax_of(const float* x, int64_t len) { return statistic_of<FiniteAbsmax>(x, len).value(); }

QL_INLINE void fake_quant_block(const float* x, float* y, int64_t len, float g, float six_g) {
    const float d = nvfp4_denominator(nvfp4_block_scale(block_amax_of(x, len), six_g), g);
    for (int64_t i = 0; i < len; ++i) y[i] = nvfp4_fake_element(x[i], d);
}

QL_INLINE void encode_block(const float* x, uint8_t* codes, uint8_t* scale, int64_t len, float g, float six_g) {
    const float s = nvfp4_block_scale(block_amax_of(x, len), six_g);
    *scale = nvfp4_scale_code(s);
    const float d = nvfp4_denominator(s, g);
    for (int64_t i = 0; i < len; ++i) codes[i] = nvfp4_code_element(x[i], d);
}

QL_INLINE void decode_block(const uint8_t* codes, uint8_t s8, float* y, int64_t len, float g) {
    const float d = nvfp4_denominator_of_code(s8, g);
    for (int64_t i = 0; i < len; ++i) y[i] = nvfp4_decode_element(codes[i], d);
}

// Whole blocks, in tiles: block amaxes as integer maxima of the magnitude bits, eight blocks at
// a time (block_magnitude_max.h), then the tile's denominators in one vectorised loop, then the
// elements with a constant 16-wide inner loop. A tile whose denominators are all positive (any
// tile without an underflowed E4M3 scale) takes the element loop without per-block tests.
QL_INLINE void fake_quant_blocks(const float* __restrict x, float* __restrict y, int64_t nblocks, float g,
                                 float six_g) {
    constexpr int64_t kTile = 64;
    float amax[kTile], denom[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * kNvfp4Block;
        float* yt = y + t0 * kNvfp4Block;
        finite_block_amax<kNvfp4Block>(xt, nt, amax);
        for (int64_t b = 0; b < nt; ++b) denom[b] = nvfp4_denominator(nvfp4_block_scale(amax[b], six_g), g);
        uint32_t not_positive = 0;  // an integer or-reduction, which vectorises
        for (int64_t b = 0; b < nt; ++b) not_positive |= denom[b] > 0.0f ? 0u : 1u;
        if (not_positive == 0) {
            for (int64_t b = 0; b < nt; ++b) {
                const float d = denom[b];
                const float* xb = xt + b * kNvfp4Block;
                float* yb = yt + b * kNvfp4Block;
                for (int i = 0; i < kNvfp4Block; ++i) yb[i] = nvfp4_fake_element_positive_d(xb[i], d);
            }
            continue;
        }
        for (int64_t b = 0; b < nt; ++b) {
            const float d = denom[b];
            const float* xb = xt + b * kNvfp4Block;
            float* yb = yt + b * kNvfp4Block;
            for (int i = 0; i < kNvfp4Block; ++i) yb[i] = nvfp4_fake_element(xb[i], d);
        }
    }
}

// Tiled like fake_quant_blocks: amaxes, then scale bytes and denominators, then the codes.
QL_INLINE void encode_blocks(const float* __restrict x, uint8_t* __restrict codes, uint8_t* __restrict scales,
                   int64_t nblocks, float g, float six_g) {
    constexpr int64_t kTile = 64;
    float amax[kTile], denom[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * kNvfp4Block;
        uint8_t* ct = codes + t0 * kNvfp4Block;
        finite_block_amax<kNvfp4Block>(xt, nt, amax);
        for (int64_t b = 0; b < nt; ++b) {
            const float s = nvfp4_block_scale(amax[b], six_g);
            scales[t0 + b] = nvfp4_scale_code(s);
            denom[b] = nvfp4_denominator(s, g);
        }
        for (int64_t b = 0; b < nt; ++b) {
            const float d = denom[b];
            const float* xb = xt + b * kNvfp4Block;
            uint8_t* cb = ct + b * kNvfp4Block;
            for (int i = 0; i < kNvfp4Block; ++i) cb[i] = nvfp4_code_element(xb[i], d);
        }
    }
}

QL_INLINE void decode_blocks(const uint8_t* __restrict codes, const uint8_t* __restrict scales, float* __restrict y,
                             int64_t nblocks, float g) {
    for (int64_t b = 0; b < nblocks; ++b)
        decode_block(codes + b * kNvfp4Block, scales[b], y + b * kNvfp4Block, kNvfp4Block, g);
}

}  // namespace

float nvfp4_global_scale(float amax) { return amax / (6.0f * 448.0f); }

void nvfp4_fake_quant(const float* x, float* y, const RowBlocks& L, float g) {
    const float six_g = 6.0f * g;
    for_each_block(
        L,
        [&](int64_t, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_blocks(x + off, y + off, n, g, six_g); });
        },
        [&](int64_t, int64_t off, int64_t len) {
            run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_block(x + off, y + off, len, g, six_g); });
        });
}

void nvfp4_encode(const float* x, const RowBlocks& L, float g, uint8_t* codes, uint8_t* scales) {
    const float six_g = 6.0f * g;
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { encode_blocks(x + off, codes + off, scales + b0, n, g, six_g); });
        },
        [&](int64_t b, int64_t off, int64_t len) {
            run_cpu_clone([&]() QL_CLONE_BODY { encode_block(x + off, codes + off, scales + b, len, g, six_g); });
        });
}

void nvfp4_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, float g,
                  float* y) {
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { decode_blocks(codes + off, scales + b0, y + off, n, g); });
        },
        [&](int64_t b, int64_t off, int64_t len) {
            run_cpu_clone([&]() QL_CLONE_BODY { decode_block(codes + off, scales[b], y + off, len, g); });
        });
}

}  // namespace ql::kernels
