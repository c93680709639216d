// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/integer_quant.h"

#include "kernels/block_iteration.h"
#include "kernels/channel_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/integer_step.h"

namespace ql::kernels {
namespace {

// A span with one quantizer. A symmetric scale of 0 (an all-zero group or channel) is tested
// once: every value is then 0 (NaN kept).
template <bool ASYM>
QL_INLINE void fake_span_t(const float* __restrict x, float* __restrict y, int64_t n, const IntStep& shared) {
    const IntStep s = shared;
    if (ASYM || s.scale != 0.0f) {
        for (int64_t i = 0; i < n; ++i) y[i] = s.fake_for_nonzero_scale<ASYM>(x[i]);
        return;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = s.fake<ASYM>(x[i]);
}

QL_INLINE void fake_span_in_clone(const float* __restrict x, float* __restrict y, int64_t n, const IntStep& s) {
    if (s.asym)
        fake_span_t<true>(x, y, n, s);
    else
        fake_span_t<false>(x, y, n, s);
}

void fake_span(const float* x, float* y, int64_t n, const IntStep& s) {
    run_cpu_clone([&]() QL_CLONE_BODY { fake_span_in_clone(x, y, n, s); });
}

// A group's statistic. Symmetric: the maximum of all magnitude bits, and the masked (finite)
// maximum only for a group that holds NaN or Inf. Asymmetric: min and max of the order keys, and
// the masked range only for a group whose extremes are not finite.
QL_INLINE FiniteAbsmax group_absmax(const float* __restrict x, int64_t n) {
    const AnyAbsmax any = statistic_of<AnyAbsmax>(x, n);
    return any.m < kInfBits ? FiniteAbsmax{any.m} : statistic_of<FiniteAbsmax>(x, n);
}

QL_INLINE FiniteRange group_range(const float* __restrict x, int64_t n) {
    int32_t lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t k = sortable_key(x[i]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (lo > sortable_key(-bits_float(kInfBits)) && hi < sortable_key(bits_float(kInfBits))) return FiniteRange{lo, hi};
    return statistic_of<FiniteRange>(x, n);
}

QL_INLINE IntParams group_params(const float* x, int64_t n, IntFormat f) {
    if (f.asymmetric) return IntStep::params_for(group_range(x, n), f);
    return IntStep::params_for(group_absmax(x, n), f);
}

// GROUP > 0: a compile-time group size (the loops then have constant trip counts and no
// remainders); 0: group elements at run time.
template <bool ASYM, int64_t GROUP>
QL_INLINE void fake_groups_t(const float* __restrict x, float* __restrict y, int64_t ngroups, int64_t group,
                             IntFormat f) {
    const int64_t len = GROUP > 0 ? GROUP : group;
    for (int64_t g = 0; g < ngroups; ++g) {
        const IntStep s = IntStep::make(group_params(x + g * len, len, f), f);
        fake_span_t<ASYM>(x + g * len, y + g * len, len, s);
    }
}

template <bool ASYM>
QL_INLINE void fake_groups_sized(const float* __restrict x, float* __restrict y, int64_t ngroups, int64_t group,
                                 IntFormat f) {
    switch (group) {  // the usual group sizes (128 is the default, FORMATS.md "Integers")
        case 32: fake_groups_t<ASYM, 32>(x, y, ngroups, group, f); return;
        case 64: fake_groups_t<ASYM, 64>(x, y, ngroups, group, f); return;
        case 128: fake_groups_t<ASYM, 128>(x, y, ngroups, group, f); return;
        case 256: fake_groups_t<ASYM, 256>(x, y, ngroups, group, f); return;
        default: fake_groups_t<ASYM, 0>(x, y, ngroups, group, f); return;
    }
}

QL_INLINE void fake_groups(const float* __restrict x, float* __restrict y, int64_t ngroups, int64_t group,
                           IntFormat f) {
    if (f.asymmetric)
        fake_groups_sized<true>(x, y, ngroups, group, f);
    else
        fake_groups_sized<false>(x, y, ngroups, group, f);
}

QL_INLINE void fake_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t channels,
                         const IntParams* __restrict params, IntFormat f) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) y[r * channels + c] = IntStep::make(params[c], f).fake(x[r * channels + c]);
}

QL_INLINE void encode_span(const float* __restrict x, uint8_t* __restrict codes, int64_t n, const IntStep& shared) {
    const IntStep s = shared;
    for (int64_t i = 0; i < n; ++i) codes[i] = s.encode(x[i]);
}

QL_INLINE void decode_span(const uint8_t* __restrict codes, float* __restrict y, int64_t n, const IntStep& shared) {
    const IntStep s = shared;
    for (int64_t i = 0; i < n; ++i) y[i] = s.decode(codes[i]);
}

}  // namespace

IntParams int_params_for_range(float lo, float hi, IntFormat f) { return IntStep::params_for_range(lo, hi, f); }

void int_fake_quant_channels(const float* x, float* y, const ChannelLayout& L, const IntParams* params,
                             IntFormat f) {
    for_each_channel_run(
        L, [&](int64_t c, int64_t off, int64_t n) { fake_span(x + off, y + off, n, IntStep::make(params[c], f)); },
        [&](int64_t off, int64_t rows) {
            run_cpu_clone([&]() QL_CLONE_BODY { fake_rows(x + off, y + off, rows, L.channels, params, f); });
        });
}

void int_encode_channels(const float* x, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         uint8_t* codes) {
    for_each_channel_run(
        L,
        [&](int64_t c, int64_t off, int64_t n) {
            const IntStep s = IntStep::make(params[c], f);
            run_cpu_clone([&]() QL_CLONE_BODY { encode_span(x + off, codes + off, n, s); });
        },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) {
                    const int64_t i = off + r * L.channels + c;
                    codes[i] = IntStep::make(params[c], f).encode(x[i]);
                }
        });
}

void int_decode_channels(const uint8_t* codes, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         float* y) {
    for_each_channel_run(
        L,
        [&](int64_t c, int64_t off, int64_t n) {
            const IntStep s = IntStep::make(params[c], f);
            run_cpu_clone([&]() QL_CLONE_BODY { decode_span(codes + off, y + off, n, s); });
        },
        [&](int64_t off, int64_t rows) {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < L.channels; ++c) {
                    const int64_t i = off + r * L.channels + c;
                    y[i] = IntStep::make(params[c], f).decode(codes[i]);
                }
        });
}

void int_fake_quant_groups(const float* x, float* y, const RowBlocks& L, IntFormat f) {
    for_each_block(
        L,
        [&](int64_t, int64_t n, int64_t off) {
            run_cpu_clone([&]() QL_CLONE_BODY { fake_groups(x + off, y + off, n, L.block, f); });
        },
        [&](int64_t, int64_t off, int64_t len) {
            run_cpu_clone([&]() QL_CLONE_BODY {
                fake_span_in_clone(x + off, y + off, len, IntStep::make(group_params(x + off, len, f), f));
            });
        });
}

void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) {
        run_cpu_clone([&]() QL_CLONE_BODY {
            const IntParams p = group_params(x + off, len, f);
            params[b] = p;
            encode_span(x + off, codes + off, len, IntStep::make(p, f));
        });
    });
}

void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f,
                       float* y) {
    for_each_block_singly(L, [&](int64_t b, int64_t off, int64_t len) {
        const IntStep s = IntStep::make(params[b], f);
        run_cpu_clone([&]() QL_CLONE_BODY { decode_span(codes + off, y + off, len, s); });
    });
}

}  // namespace ql::kernels
