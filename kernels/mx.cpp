// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/mx.h"

#include "kernels/block_iteration.h"
#include "kernels/block_magnitude_max.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"
#include "kernels/mx_element.h"

namespace ql::kernels {
namespace {

template <class El>
QL_INLINE uint8_t block_scale_byte(const float* x, int64_t len, MxScaleRule rule, float inv_max) {
    return mx_scale_byte<El>(statistic_of<AnyAbsmax>(x, len).value(), rule, inv_max);
}

template <class El>
QL_INLINE void fake_quant_block(const float* x, float* y, int64_t len, MxScaleRule rule, float inv_max) {
    const MxBlockScale k = mx_block_scale(block_scale_byte<El>(x, len, rule, inv_max));
    for (int64_t i = 0; i < len; ++i) y[i] = mx_fake_element<El>(x[i], k);
}

template <class El>
QL_INLINE void encode_block(const float* x, uint8_t* codes, uint8_t* scale_out, int64_t len, MxScaleRule rule,
                            float inv_max) {
    const uint8_t byte = block_scale_byte<El>(x, len, rule, inv_max);
    *scale_out = byte;
    const MxBlockScale k = mx_block_scale(byte);
    for (int64_t i = 0; i < len; ++i) codes[i] = mx_code_element<El>(x[i], k);
}

template <class El>
QL_INLINE void decode_block(const uint8_t* codes, uint8_t byte, float* y, int64_t len) {
    const float scale = e8m0_to_float(byte);
    for (int64_t i = 0; i < len; ++i) y[i] = mx_decode_element<El>(codes[i], scale);
}

// Whole 32-blocks in tiles: the tile's scale bytes first (block amaxes eight blocks at a time,
// block_magnitude_max.h), then the elements with a constant-width inner loop (vectorises with
// the scale broadcast). A tile without a NaN scale byte (no NaN or Inf in it) skips the per-element
// NaN select.
template <class El>
QL_INLINE void fake_quant_blocks(const float* __restrict x, float* __restrict y, int64_t nblocks, MxScaleRule rule,
                                 float inv_max) {
    constexpr int64_t B = kMxBlock;
    constexpr int64_t kTile = 32;
    float amax[kTile], rcp[kTile], scale[kTile];
    uint8_t bytes[kTile];
    for (int64_t t0 = 0; t0 < nblocks; t0 += kTile) {
        const int64_t nt = nblocks - t0 < kTile ? nblocks - t0 : kTile;
        const float* xt = x + t0 * B;
        float* yt = y + t0 * B;
        any_block_amax<B>(xt, nt, amax);
        uint32_t any_nan = 0;
        for (int64_t b = 0; b < nt; ++b) {
            bytes[b] = mx_scale_byte<El>(amax[b], rule, inv_max);
            any_nan |= bytes[b] == kE8m0Nan ? 1u : 0u;
        }
        if (any_nan != 0) {
            for (int64_t b = 0; b < nt; ++b) {
                const MxBlockScale k = mx_block_scale(bytes[b]);
                for (int i = 0; i < B; ++i) yt[b * B + i] = mx_fake_element<El>(xt[b * B + i], k);
            }
            continue;
        }
        for (int64_t b = 0; b < nt; ++b) {
            rcp[b] = mx_block_rcp(bytes[b]);
            scale[b] = mx_block_scale_value(bytes[b]);
        }
        for (int64_t b = 0; b < nt; ++b) {
            const float r = rcp[b], sc = scale[b];
            const float* xb = xt + b * B;
            float* yb = yt + b * B;
            for (int i = 0; i < B; ++i) yb[i] = El::round(xb[i] * r) * sc;
        }
    }
}

template <class El>
QL_INLINE void encode_blocks(const float* __restrict x, uint8_t* __restrict codes, uint8_t* __restrict scales,
                             int64_t nblocks, MxScaleRule rule, float inv_max) {
    for (int64_t b = 0; b < nblocks; ++b)
        encode_block<El>(x + b * kMxBlock, codes + b * kMxBlock, scales + b, kMxBlock, rule, inv_max);
}

template <class El>
QL_INLINE void decode_blocks(const uint8_t* __restrict codes, const uint8_t* __restrict scales, float* __restrict y,
                             int64_t nblocks) {
    for (int64_t b = 0; b < nblocks; ++b)
        decode_block<El>(codes + b * kMxBlock, scales[b], y + b * kMxBlock, kMxBlock);
}

// The standard 32-element blocks take the tiled loops; other block sizes (and every short row
// tail) go block by block.
template <class El>
void fake_quant_impl(const float* x, float* y, const RowBlocks& L, MxScaleRule rule) {
    const float inv_max = mx_inverse_max<El>();
    auto one = [&](int64_t, int64_t off, int64_t len) {
        run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_block<El>(x + off, y + off, len, rule, inv_max); });
    };
    if (L.block != kMxBlock) {
        for_each_block_singly(L, one);
        return;
    }
    for_each_block(
        L,
        [&](int64_t, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { fake_quant_blocks<El>(x + off, y + off, n, rule, inv_max); });
        },
        one);
}

template <class El>
void encode_impl(const float* x, const RowBlocks& L, MxScaleRule rule, uint8_t* codes, uint8_t* scales) {
    const float inv_max = mx_inverse_max<El>();
    auto one = [&](int64_t b, int64_t off, int64_t len) {
        run_cpu_clone(
            [&]() QL_CLONE_BODY { encode_block<El>(x + off, codes + off, scales + b, len, rule, inv_max); });
    };
    if (L.block != kMxBlock) {
        for_each_block_singly(L, one);
        return;
    }
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            run_cpu_clone(
                [&]() QL_CLONE_BODY { encode_blocks<El>(x + off, codes + off, scales + b0, n, rule, inv_max); });
        },
        one);
}

template <class El>
void decode_impl(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, float* y) {
    auto one = [&](int64_t b, int64_t off, int64_t len) {
        run_cpu_clone([&]() QL_CLONE_BODY { decode_block<El>(codes + off, scales[b], y + off, len); });
    };
    if (L.block != kMxBlock) {
        for_each_block_singly(L, one);
        return;
    }
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { decode_blocks<El>(codes + off, scales + b0, y + off, n); });
        },
        one);
}

}  // namespace

int mx_emax(MxElement e) {
    int r = 0;
    visit_mx_element(e, [&](auto el) { r = decltype(el)::emax; });
    return r;
}

float mx_max_element(MxElement e) {
    float r = 0;
    visit_mx_element(e, [&](auto el) { r = decltype(el)::max_element(); });
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
    visit_mx_element(e, [&](auto el) { fake_quant_impl<decltype(el)>(x, y, L, rule); });
}

void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes,
               uint8_t* scales) {
    visit_mx_element(e, [&](auto el) { encode_impl<decltype(el)>(x, L, rule, codes, scales); });
}

void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e, float* y) {
    visit_mx_element(e, [&](auto el) { decode_impl<decltype(el)>(codes, scales, L, y); });
}

}  // namespace ql::kernels
