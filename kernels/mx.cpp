// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/mx.h"

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/minifloat.h"

namespace ql::kernels {
namespace {

// Element formats as types, so each one's loops compile to straight-line vector code.
template <class F>
struct FloatElement {
    static constexpr int emax = F::emax;
    static float max_element() { return F::max_finite(); }
    // v = x * 2^(127 - byte): finite. Returns the grid value (signed) in the scaled domain.
    static float round(float v) { return copy_sign_of(round_to_grid<F>(abs_bits(v)), v); }
    static uint8_t encode(float v) { return static_cast<uint8_t>(encode_element<F>(v)); }
    static float decode(uint8_t c) { return decode_element<F>(c); }
    static uint8_t nan_code() { return static_cast<uint8_t>(F::nan_code); }
};

struct Int8Element {
    static constexpr int emax = 0;
    static float max_element() { return 127.0f / 64.0f; }
    static float clamped_steps(float v) {
        float k = rne_small(v * 64.0f);  // |v| < 4 here, so |64 v| < 2^23
        k = k > 127.0f ? 127.0f : k;
        k = k < -127.0f ? -127.0f : k;
        return k;
    }
    static float round(float v) { return clamped_steps(v) * 0.015625f; }
    static uint8_t encode(float v) {
        return static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(clamped_steps(v))));
    }
    static float decode(uint8_t c) { return static_cast<float>(static_cast<int8_t>(c)) * 0.015625f; }
    static uint8_t nan_code() { return 0; }
};

template <class El>
inline uint8_t scale_byte(float block_amax, MxScaleRule rule, float inv_max) {
    return rule == MxScaleRule::Floor ? e8m0_floor(block_amax, El::emax)
                                      : e8m0_round_up(block_amax, inv_max);
}

// Block amax as a float; NaN/Inf anywhere in the block yields a non-finite value (bits >= Inf).
inline float block_amax_bits(const float* x, int64_t len) {
    uint32_t m = 0;
    for (int64_t i = 0; i < len; ++i) {
        const uint32_t a = magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    return bits_float(m);
}

template <class El>
inline void fake_quant_block(const float* x, float* y, int64_t len, MxScaleRule rule, float inv_max) {
    const uint8_t byte = scale_byte<El>(block_amax_bits(x, len), rule, inv_max);
    if (byte == kE8m0Nan) {
        for (int64_t i = 0; i < len; ++i) y[i] = bits_float(0x7FC00000u);
        return;
    }
    const float rcp = e8m0_reciprocal(byte);
    const float scale = e8m0_to_float(byte);
    for (int64_t i = 0; i < len; ++i) y[i] = El::round(x[i] * rcp) * scale;
}

template <class El>
inline void encode_block(const float* x, uint8_t* codes, uint8_t* scale_out, int64_t len,
                         MxScaleRule rule, float inv_max) {
    const uint8_t byte = scale_byte<El>(block_amax_bits(x, len), rule, inv_max);
    *scale_out = byte;
    if (byte == kE8m0Nan) {
        for (int64_t i = 0; i < len; ++i) codes[i] = El::nan_code();
        return;
    }
    const float rcp = e8m0_reciprocal(byte);
    for (int64_t i = 0; i < len; ++i) codes[i] = El::encode(x[i] * rcp);
}

template <class El>
inline void decode_block(const uint8_t* codes, uint8_t byte, float* y, int64_t len) {
    const float scale = e8m0_to_float(byte);
    for (int64_t i = 0; i < len; ++i) y[i] = El::decode(codes[i]) * scale;
}

// Whole 32-blocks in tiles: scales for the tile first, then the elements with a constant-width
// inner loop (vectorises with the scale broadcast).
template <class El>
QL_CPU_CLONES void fake_quant_blocks(const float* __restrict x, float* __restrict y, int64_t nblocks,
                                     MxScaleRule rule, float inv_max) {
    constexpr int64_t B = kMxBlock;
    constexpr int64_t kTile = 32;
    float rcp[kTile], scale[kTile];
    bool nan_block[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * B;
        float* yt = y + t0 * B;
        for (int64_t b = 0; b < nt; ++b) {
            const uint8_t byte = scale_byte<El>(block_amax_bits(xt + b * B, B), rule, inv_max);
            nan_block[b] = byte == kE8m0Nan;
            rcp[b] = e8m0_reciprocal(byte);
            scale[b] = e8m0_to_float(byte);
        }
        for (int64_t b = 0; b < nt; ++b) {
            const float* xb = xt + b * B;
            float* yb = yt + b * B;
            if (nan_block[b]) {
                for (int i = 0; i < B; ++i) yb[i] = bits_float(0x7FC00000u);
                continue;
            }
            const float r = rcp[b], s = scale[b];
            for (int i = 0; i < B; ++i) yb[i] = El::round(xb[i] * r) * s;
        }
    }
}

template <class El>
QL_CPU_CLONES void encode_blocks(const float* __restrict x, uint8_t* __restrict codes,
                                 uint8_t* __restrict scales, int64_t nblocks, MxScaleRule rule,
                                 float inv_max) {
    for (int64_t b = 0; b < nblocks; ++b)
        encode_block<El>(x + b * kMxBlock, codes + b * kMxBlock, scales + b, kMxBlock, rule, inv_max);
}

template <class El>
QL_CPU_CLONES void decode_blocks(const uint8_t* __restrict codes, const uint8_t* __restrict scales,
                                 float* __restrict y, int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b)
        decode_block<El>(codes + b * kMxBlock, scales[b], y + b * kMxBlock, kMxBlock);
}

template <class El>
void fake_quant_impl(const float* x, float* y, const RowBlocks& L, MxScaleRule rule) {
    const float inv_max = 1.0f / El::max_element();
    for_each_block(
        L,
        [&](int64_t, int64_t n, int64_t off) {
            if (L.block == kMxBlock) {
                fake_quant_blocks<El>(x + off, y + off, n, rule, inv_max);
                return;
            }
            for (int64_t b = 0; b < n; ++b)
                fake_quant_block<El>(x + off + b * L.block, y + off + b * L.block, L.block, rule, inv_max);
        },
        [&](int64_t, int64_t off, int64_t len) { fake_quant_block<El>(x + off, y + off, len, rule, inv_max); });
}

template <class El>
void encode_impl(const float* x, const RowBlocks& L, MxScaleRule rule, uint8_t* codes, uint8_t* scales) {
    const float inv_max = 1.0f / El::max_element();
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            if (L.block == kMxBlock) {
                encode_blocks<El>(x + off, codes + off, scales + b0, n, rule, inv_max);
                return;
            }
            for (int64_t b = 0; b < n; ++b)
                encode_block<El>(x + off + b * L.block, codes + off + b * L.block, scales + b0 + b,
                                 L.block, rule, inv_max);
        },
        [&](int64_t b, int64_t off, int64_t len) {
            encode_block<El>(x + off, codes + off, scales + b, len, rule, inv_max);
        });
}

template <class El>
void decode_impl(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, float* y) {
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            if (L.block == kMxBlock) {
                decode_blocks<El>(codes + off, scales + b0, y + off, n);
                return;
            }
            for (int64_t b = 0; b < n; ++b)
                decode_block<El>(codes + off + b * L.block, scales[b0 + b], y + off + b * L.block, L.block);
        },
        [&](int64_t b, int64_t off, int64_t len) { decode_block<El>(codes + off, scales[b], y + off, len); });
}

template <class Visitor>
void with_element(MxElement e, const Visitor& v) {
    switch (e) {
        case MxElement::E4M3: v(FloatElement<E4M3>{}); return;
        case MxElement::E5M2: v(FloatElement<E5M2>{}); return;
        case MxElement::E3M2: v(FloatElement<E3M2>{}); return;
        case MxElement::E2M3: v(FloatElement<E2M3>{}); return;
        case MxElement::E2M1: v(FloatElement<E2M1>{}); return;
        case MxElement::Int8: v(Int8Element{}); return;
    }
}

}  // namespace

int mx_emax(MxElement e) {
    int r = 0;
    with_element(e, [&](auto el) { r = decltype(el)::emax; });
    return r;
}

float mx_max_element(MxElement e) {
    float r = 0;
    with_element(e, [&](auto el) { r = decltype(el)::max_element(); });
    return r;
}

int mx_element_bits(MxElement e) {
    switch (e) {
        case MxElement::E3M2:
        case MxElement::E2M3: return 6;
        case MxElement::E2M1: return 4;
        default: return 8;
    }
}

void mx_fake_quant(const float* x, float* y, const RowBlocks& L, MxElement e, MxScaleRule rule) {
    with_element(e, [&](auto el) { fake_quant_impl<decltype(el)>(x, y, L, rule); });
}

void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes,
               uint8_t* scales) {
    with_element(e, [&](auto el) { encode_impl<decltype(el)>(x, L, rule, codes, scales); });
}

void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e, float* y) {
    with_element(e, [&](auto el) { decode_impl<decltype(el)>(codes, scales, L, y); });
}

}  // namespace ql::kernels
