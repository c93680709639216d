// SPDX-License-Identifier: GPL-3.0-or-later
// Eight 32-element GGUF blocks at a time on the CPU (Q8_0, Q4_0, Q5_0, Q4_1): the per-block
// statistic of each block, then the per-block scalar work -- d, 1/d and the fp16 rounding of the
// scales -- for all eight in one vector each (GCC vector types, compiled into every
// QL_CPU_CLONES clone), then each block's codes. The same values and bytes as the block functions
// of gguf_block_codec.h, which stay the definition (and the CUDA kernels' code); this only moves
// the scalar work that dominated the block loops (the software fp16 rounding of every d) into
// lanes. Tested against the block functions in tests/kernels/gguf_blocks_test.cpp.
#pragma once

#if !defined(__GNUC__) || defined(__CUDACC__)
#error "gguf_block_tiles.h is CPU-only (GCC vector types)"
#endif

#include <cstdint>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_block_codec.h"

namespace ql::kernels::gguf_tiles {

using namespace gguf_codec;

constexpr int kTile = 8;

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));

QL_INLINE F8 load8(const float* p) {
    F8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
QL_INLINE U8 bits8(F8 v) { return (U8)v; }
QL_INLINE F8 floats8(U8 v) { return (F8)v; }
QL_INLINE F8 select8(I8 m, F8 a, F8 b) { return floats8((bits8(a) & (U8)m) | (bits8(b) & ~(U8)m)); }
QL_INLINE U8 selectu8(I8 m, U8 a, U8 b) { return (a & (U8)m) | (b & ~(U8)m); }

// fp32 -> fp16 bits, round to nearest even, overflow to Inf (ggml_compute_fp32_to_fp16, the FP16
// library's algorithm; equal to fp32_to_fp16_bits for every non-NaN float). d is never NaN here.
QL_INLINE U8 fp16_bits8(F8 f) {
    const F8 base0 = (floats8(bits8(f) & 0x7FFFFFFFu) * 0x1.0p+112f) * 0x1.0p-110f;
    const U8 w = bits8(f);
    const U8 shl1_w = w + w;
    const U8 sign = w & 0x80000000u;
    U8 bias = shl1_w & 0xFF000000u;
    bias = selectu8((I8)(bias < 0x71000000u), (U8){} + 0x71000000u, bias);
    const F8 base = floats8((bias >> 1) + 0x07800000u) + base0;
    const U8 b = bits8(base);
    const U8 nonsign = ((b >> 13) & 0x00007C00u) + (b & 0x00000FFFu);
    return (sign >> 16) | nonsign;
}

// fp16 bits -> fp32 (exact; ggml_compute_fp16_to_fp32).
QL_INLINE F8 fp16_value8(U8 h) {
    const U8 w = h << 16;
    const U8 sign = w & 0x80000000u;
    const U8 two_w = w + w;
    const F8 normalized = floats8((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const F8 denormalized = floats8((two_w >> 17) | (126u << 23)) - 0.5f;
    const I8 is_denormal = (I8)(two_w < (1u << 27));
    return floats8(sign | selectu8(is_denormal, bits8(denormalized), bits8(normalized)));
}

// 1/d, or 0 where d is 0 or 1/d is not finite (safe_inverse).
QL_INLINE F8 safe_inverse8(F8 d) {
    const F8 id = select8((I8)(d != 0.0f), 1.0f / d, (F8){});
    return select8((I8)((bits8(id) & 0x7F800000u) != 0x7F800000u), id, (F8){});
}

// The per-block scalars of eight blocks.
struct TileScales {
    alignas(32) float id[kTile];    // the inverse scale the codes use
    alignas(32) float dh[kTile];    // d as its fp16 field decodes
    alignas(32) float mh[kTile];    // Q4_1: m as its fp16 field decodes
    alignas(32) float mn[kTile];    // Q4_1: the float min the codes use
    uint16_t d_bits[kTile], m_bits[kTile];
    int overflow[kTile];            // Q4_0 / Q5_0: 1/d overflowed (all codes 0)
};

template <GgufType T>
QL_INLINE void tile_scales(const float* x, TileScales& s) {
    alignas(32) float a[kTile], b[kTile];
    for (int k = 0; k < kTile; ++k) {
        const float* xb = x + k * kB;
        if constexpr (T == GgufType::Q8_0) {
            a[k] = statistic_of<FiniteAbsmax>(xb, kB).value();
        } else if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
            a[k] = signed_max(xb);
        } else {  // Q4_1: as q4_1_encode
            int32_t lo = INT32_MAX, hi = INT32_MIN;
            for (int i = 0; i < kB; ++i) {
                const bool finite = magnitude_bits(xb[i]) < kInfBits;
                const int32_t key = magnitude_bits(xb[i]) == 0 ? 0 : sortable_key(xb[i]);
                lo = finite && key < lo ? key : lo;
                hi = finite && key > hi ? key : hi;
            }
            const bool any = lo <= hi;
            float mn = any ? from_sortable_key(lo) : 0.0f, mx = any ? from_sortable_key(hi) : 0.0f;
            if (lo == 0 || hi == 0) {
                float first_zero = 0.0f;
                for (int i = kB - 1; i >= 0; --i) first_zero = magnitude_bits(xb[i]) == 0 ? xb[i] : first_zero;
                mn = lo == 0 ? first_zero : mn;
                mx = hi == 0 ? first_zero : mx;
            }
            a[k] = mn;
            b[k] = mx;
        }
    }
    F8 d, id;
    if constexpr (T == GgufType::Q8_0) {
        d = load8(a) / 127.0f;
        id = safe_inverse8(d);
    } else if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
        d = load8(a) / (T == GgufType::Q4_0 ? -8.0f : -16.0f);
        const F8 inv = select8((I8)(d != 0.0f), 1.0f / d, (F8){});  // offset_inverse
        const I8 over = (I8)((bits8(inv) & 0x7FFFFFFFu) == 0x7F800000u);
        for (int k = 0; k < kTile; ++k) s.overflow[k] = over[k] != 0;
        id = inv;
    } else {
        const F8 mn = load8(a);
        d = (load8(b) - mn) / 15.0f;
        id = safe_inverse8(d);
        std::memcpy(s.mn, &mn, sizeof mn);
        const U8 mb = fp16_bits8(mn);
        const F8 mh = fp16_value8(mb);
        std::memcpy(s.mh, &mh, sizeof mh);
        for (int k = 0; k < kTile; ++k) s.m_bits[k] = static_cast<uint16_t>(mb[k]);
    }
    const U8 db = fp16_bits8(d);
    const F8 dh = fp16_value8(db);
    std::memcpy(s.id, &id, sizeof id);
    std::memcpy(s.dh, &dh, sizeof dh);
    for (int k = 0; k < kTile; ++k) s.d_bits[k] = static_cast<uint16_t>(db[k]);
}

QL_INLINE void put_bits16(uint8_t* p, uint16_t h) {
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}

// Eight blocks of x -> eight blocks of bytes (encode_block<T> of each).
template <GgufType T>
QL_INLINE void encode_tile(const float* x, uint8_t* out) {
    TileScales s;
    tile_scales<T>(x, s);
    constexpr int B = block_bytes(T);
    for (int k = 0; k < kTile; ++k) {
        const float* xb = x + k * kB;
        uint8_t* o = out + k * B;
        const float id = s.id[k];
        put_bits16(o, s.d_bits[k]);
        if constexpr (T == GgufType::Q8_0) {
            float q[kB];
            for (int i = 0; i < kB; ++i) q[i] = round_half_away(clamp_or_zero(xb[i] * id, -127.0f, 127.0f));
            for (int i = 0; i < kB; ++i) o[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(q[i])));
        } else if constexpr (T == GgufType::Q4_0) {
            int packed[kH];
            for (int j = 0; j < kH; ++j)
                packed[j] = static_cast<int>(offset_code<16>(xb[j], id) + 16.0f * offset_code<16>(xb[j + kH], id));
            for (int j = 0; j < kH; ++j) o[2 + j] = s.overflow[k] ? uint8_t{0} : static_cast<uint8_t>(packed[j]);
        } else if constexpr (T == GgufType::Q5_0) {
            int packed[kH];
            uint32_t qh = 0;
            for (int j = 0; j < kH; ++j) {
                const int lo = static_cast<int>(offset_code<32>(xb[j], id));
                const int hi = static_cast<int>(offset_code<32>(xb[j + kH], id));
                packed[j] = (lo & 0x0F) | ((hi & 0x0F) << 4);
                qh |= (static_cast<uint32_t>(lo >> 4) << j) | (static_cast<uint32_t>(hi >> 4) << (j + kH));
            }
            qh = s.overflow[k] ? 0u : qh;
            for (int q = 0; q < 4; ++q) o[2 + q] = static_cast<uint8_t>(qh >> (8 * q));
            for (int j = 0; j < kH; ++j) o[6 + j] = s.overflow[k] ? uint8_t{0} : static_cast<uint8_t>(packed[j]);
        } else {  // Q4_1
            put_bits16(o + 2, s.m_bits[k]);
            const float mn = s.mn[k];
            int packed[kH];
            for (int j = 0; j < kH; ++j)
                packed[j] = static_cast<int>(q4_1_code(xb[j], mn, id) + 16.0f * q4_1_code(xb[j + kH], mn, id));
            for (int j = 0; j < kH; ++j) o[4 + j] = static_cast<uint8_t>(packed[j]);
        }
    }
}

// Eight blocks of x -> their fake-quantized values (fake_quant_block<T> of each; NaN stays NaN).
// x and y must not overlap.
template <GgufType T>
QL_INLINE void fake_tile(const float* x, float* y) {
    TileScales s;
    tile_scales<T>(x, s);
    for (int k = 0; k < kTile; ++k) {
        const float* xb = x + k * kB;
        float* yb = y + k * kB;
        const float id = s.id[k], dh = s.dh[k];
        if constexpr (T == GgufType::Q8_0) {
            for (int i = 0; i < kB; ++i) {
                const float q = round_half_away(clamp_or_zero(xb[i] * id, -127.0f, 127.0f));
                // + 0.0f: a code rounded to -0 decodes as the integer 0, i.e. +0 * d (ggml's dequantize).
                yb[i] = is_nan_bits(xb[i]) ? xb[i] : (q + 0.0f) * dh;
            }
        } else if constexpr (T == GgufType::Q4_0 || T == GgufType::Q5_0) {
            constexpr int levels = T == GgufType::Q4_0 ? 16 : 32;
            const bool over = s.overflow[k] != 0;
            for (int i = 0; i < kB; ++i) {
                const float c = over ? 0.0f : offset_code<levels>(xb[i], id);
                yb[i] = is_nan_bits(xb[i]) ? xb[i] : (c - static_cast<float>(levels / 2)) * dh;
            }
        } else {  // Q4_1
            const float mn = s.mn[k], mh = s.mh[k];
            for (int i = 0; i < kB; ++i) {
                const float c = q4_1_code(xb[i], mn, id);
                yb[i] = is_nan_bits(xb[i]) ? xb[i] : c * dh + mh;
            }
        }
    }
}

}  // namespace ql::kernels::gguf_tiles
