// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/scaled_fp8.h"

#include "kernels/channel_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/scaled_fp8_element.h"

namespace ql::kernels {
namespace {

// out = op.apply(in, param) over a run of one channel, and over rows of all channels (inner == 1).
template <class Op>
QL_INLINE void map_span(const Op op, const typename Op::In* __restrict in, typename Op::Out* __restrict out, int64_t n,
                        typename Op::Param p) {
    for (int64_t i = 0; i < n; ++i) out[i] = op.apply(in[i], p);
}

// Fake quantization with a positive scale (the usual case, tested once per run) skips a mask.
template <class F>
QL_INLINE void map_span(const Fp8FakeOp<F> op, const float* __restrict in, float* __restrict out, int64_t n,
                        float scale) {
    if (scale > 0.0f) {
        for (int64_t i = 0; i < n; ++i) out[i] = fp8_fake_element_positive_scale<F>(in[i], scale);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = op.apply(in[i], scale);
}

template <class Op>
QL_INLINE void map_rows(const Op op, const typename Op::In* __restrict in, typename Op::Out* __restrict out,
                        int64_t rows, int64_t channels) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) out[r * channels + c] = op.apply(in[r * channels + c], op.param(c));
}

template <class Op>
void map_channels(const Op& op, const ChannelLayout& L, const typename Op::In* in, typename Op::Out* out) {
    for_each_channel_run(
        L,
        [&](int64_t c, int64_t off, int64_t n) {
            run_cpu_clone([&]() QL_CLONE_BODY { map_span(op, in + off, out + off, n, op.param(c)); });
        },
        [&](int64_t off, int64_t rows) {
            run_cpu_clone([&]() QL_CLONE_BODY { map_rows(op, in + off, out + off, rows, L.channels); });
        });
}

}  // namespace

float fp8_max(Fp8Kind k) { return k == Fp8Kind::E4M3 ? E4M3::max_finite() : E5M2::max_finite(); }

float fp8_scale_for_amax(float amax, Fp8Kind k) { return fp8_scale_of(amax, fp8_max(k)); }

void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k) {
    visit_fp8_kind(k, [&](auto f) { map_channels(Fp8FakeOp<decltype(f)>{{scales}}, L, x, y); });
}

void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes) {
    visit_fp8_kind(k, [&](auto f) { map_channels(Fp8EncodeOp<decltype(f)>{{scales}}, L, x, codes); });
}

void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y) {
    visit_fp8_kind(k, [&](auto f) { map_channels(Fp8DecodeOp<decltype(f)>{{scales}}, L, codes, y); });
}

}  // namespace ql::kernels
