// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/scaled_fp8.h"

#include "kernels/channel_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/minifloat.h"

namespace ql::kernels {
namespace {

template <class F>
QL_CPU_CLONES void fake_quant_span(const float* __restrict x, float* __restrict y, int64_t n, float scale) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float q = round_to_grid<F>(abs_bits(v / scale)) * scale;
        y[i] = is_nan_bits(v) ? v : copy_sign_of(q, v);
    }
}

template <class F>
QL_CPU_CLONES void fake_quant_rows(const float* __restrict x, float* __restrict y, int64_t rows,
                                   int64_t channels, const float* __restrict scales) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) {
            const float v = x[r * channels + c];
            const float s = scales[c];
            const float q = round_to_grid<F>(abs_bits(v / s)) * s;
            y[r * channels + c] = is_nan_bits(v) ? v : copy_sign_of(q, v);
        }
}

template <class F>
void encode_span(const float* x, uint8_t* codes, int64_t n, float scale) {
    for (int64_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(encode_element<F>(x[i] / scale));
}

template <class F>
void decode_span(const uint8_t* codes, float* y, int64_t n, float scale) {
    for (int64_t i = 0; i < n; ++i) y[i] = decode_element<F>(codes[i]) * scale;
}

template <class F>
void fake_quant_impl(const float* x, float* y, const ChannelLayout& L, const float* scales) {
    for_each_channel_run(
        L, [&](int64_t c, int64_t off, int64_t n) { fake_quant_span<F>(x + off, y + off, n, scales[c]); },
        [&](int64_t off, int64_t rows) { fake_quant_rows<F>(x + off, y + off, rows, L.channels, scales); });
}

template <class F>
void encode_impl(const float* x, const ChannelLayout& L, const float* scales, uint8_t* codes) {
    for_each_channel_run(
        L, [&](int64_t c, int64_t off, int64_t n) { encode_span<F>(x + off, codes + off, n, scales[c]); },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) {
                    const int64_t i = off + r * L.channels + c;
                    codes[i] = static_cast<uint8_t>(encode_element<F>(x[i] / scales[c]));
                }
        });
}

template <class F>
void decode_impl(const uint8_t* codes, const ChannelLayout& L, const float* scales, float* y) {
    for_each_channel_run(
        L, [&](int64_t c, int64_t off, int64_t n) { decode_span<F>(codes + off, y + off, n, scales[c]); },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) {
                    const int64_t i = off + r * L.channels + c;
                    y[i] = decode_element<F>(codes[i]) * scales[c];
                }
        });
}

}  // namespace

float fp8_max(Fp8Kind k) { return k == Fp8Kind::E4M3 ? E4M3::max_finite() : E5M2::max_finite(); }

float fp8_scale_for_amax(float amax, Fp8Kind k) {
    const float s = amax / fp8_max(k);
    return s == 0.0f ? 1.0f : s;
}

void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k) {
    if (k == Fp8Kind::E4M3)
        fake_quant_impl<E4M3>(x, y, L, scales);
    else
        fake_quant_impl<E5M2>(x, y, L, scales);
}

void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes) {
    if (k == Fp8Kind::E4M3)
        encode_impl<E4M3>(x, L, scales, codes);
    else
        encode_impl<E5M2>(x, L, scales, codes);
}

void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y) {
    if (k == Fp8Kind::E4M3)
        decode_impl<E4M3>(codes, L, scales, y);
    else
        decode_impl<E5M2>(codes, L, scales, y);
}

}  // namespace ql::kernels
