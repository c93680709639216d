// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/integer_quant.h"

#include "kernels/block_iteration.h"
#include "kernels/channel_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/integer_step.h"

namespace ql::kernels {
namespace {

template <bool ASYM>
QL_INLINE void fake_span_t(const float* __restrict x, float* __restrict y, int64_t n, const IntStep& shared) {
    const IntStep s = shared;
    for (int64_t i = 0; i < n; ++i) y[i] = s.fake<ASYM>(x[i]);
}

QL_CPU_CLONES
void fake_span(const float* __restrict x, float* __restrict y, int64_t n, IntStep s) {
    if (s.asym)
        fake_span_t<true>(x, y, n, s);
    else
        fake_span_t<false>(x, y, n, s);
}

QL_INLINE IntParams group_params(const float* x, int64_t n, IntFormat f) {
    if (f.asymmetric) return IntStep::params_for(statistic_of<IntGroupStatistic<true>>(x, n), f);
    return IntStep::params_for(statistic_of<IntGroupStatistic<false>>(x, n), f);
}

template <bool ASYM>
QL_INLINE void fake_groups_t(const float* __restrict x, float* __restrict y, int64_t ngroups, int64_t group,
                          IntFormat f) {
    for (int64_t g = 0; g < ngroups; ++g) {
        const IntStep s = IntStep::make(group_params(x + g * group, group, f), f);
        fake_span_t<ASYM>(x + g * group, y + g * group, group, s);
    }
}

QL_CPU_CLONES
void fake_groups(const float* __restrict x, float* __restrict y, int64_t ngroups, int64_t group, IntFormat f) {
    if (f.asymmetric)
        fake_groups_t<true>(x, y, ngroups, group, f);
    else
        fake_groups_t<false>(x, y, ngroups, group, f);
}

}  // namespace

IntParams int_params_for_range(float lo, float hi, IntFormat f) { return IntStep::params_for_range(lo, hi, f); }

void int_fake_quant_channels(const float* x, float* y, const ChannelLayout& L, const IntParams* params,
                             IntFormat f) {
    for_each_channel_run(
        L, [&](int64_t c, int64_t off, int64_t n) { fake_span(x + off, y + off, n, IntStep::make(params[c], f)); },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) {
                    const int64_t i = off + r * L.channels + c;
                    y[i] = IntStep::make(params[c], f).fake(x[i]);
                }
        });
}

void int_encode_channels(const float* x, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         uint8_t* codes) {
    for_each_channel_element(
        L, [=](int64_t c) { return IntStep::make(params[c], f); },
        [=](int64_t i, const IntStep& s) { codes[i] = s.encode(x[i]); });
}

void int_decode_channels(const uint8_t* codes, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         float* y) {
    for_each_channel_element(
        L, [=](int64_t c) { return IntStep::make(params[c], f); },
        [=](int64_t i, const IntStep& s) { y[i] = s.decode(codes[i]); });
}

void int_fake_quant_groups(const float* x, float* y, const RowBlocks& L, IntFormat f) {
    for_each_block(
        L, [&](int64_t, int64_t n, int64_t off) { fake_groups(x + off, y + off, n, L.block, f); },
        [&](int64_t, int64_t off, int64_t len) {
            fake_span(x + off, y + off, len, IntStep::make(group_params(x + off, len, f), f));
        });
}

void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) {
        params[b] = group_params(x + off, len, f);
        const IntStep s = IntStep::make(params[b], f);
        for (int64_t i = off; i < off + len; ++i) codes[i] = s.encode(x[i]);
    });
}

void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f,
                       float* y) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) {
        const IntStep s = IntStep::make(params[b], f);
        for (int64_t i = off; i < off + len; ++i) y[i] = s.decode(codes[i]);
    });
}

}  // namespace ql::kernels
