// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/integer_quant.h"

#include "kernels/block_iteration.h"
#include "kernels/channel_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {
namespace {

// One quantizer instance, with everything the element loop needs precomputed. The element
// functions are branch-free (selects only) so the loops vectorise.
struct IntStep {
    float scale;      // > 0, or 0 for an all-zero symmetric range
    float inv_scale;  // 1 / scale (asymmetric only)
    float zp;
    float lo, hi;     // code range: [-qmax, qmax] or [0, 2^b - 1]
    bool asym;

    static QL_INLINE IntStep make(const IntParams& p, IntFormat f) {
        IntStep s{};
        s.scale = p.scale;
        s.asym = f.asymmetric;
        s.zp = f.asymmetric ? p.zero_point : 0.0f;
        if (f.asymmetric) {
            s.lo = 0.0f;
            s.hi = static_cast<float>((1 << f.bits) - 1);
            s.inv_scale = 1.0f / p.scale;
        } else {
            s.hi = static_cast<float>((1 << (f.bits - 1)) - 1);
            s.lo = -s.hi;
            s.inv_scale = 0.0f;
        }
        return s;
    }

    // The integer code as a float (exact) for finite or infinite x; NaN for NaN x. Clamping
    // before the RNE keeps the argument small (|.| < 2^23) and is equivalent: anything beyond
    // the code range by more than 1 clamps to the same end either way.
    template <bool ASYM>
    QL_INLINE float code(float x) const {
        if (ASYM) {
            float t = x * inv_scale;
            const float a = lo - zp - 1.0f, b = hi - zp + 1.0f;
            t = t < a ? a : (t > b ? b : t);
            const float q = rne_small(t) + zp;
            return q < lo ? lo : (q > hi ? hi : q);
        }
        float t = x / scale;  // +-Inf or NaN when scale == 0: replaced below
        t = t < lo - 1.0f ? lo - 1.0f : (t > hi + 1.0f ? hi + 1.0f : t);
        const float q = rne_small(t);
        const float c = q < lo ? lo : (q > hi ? hi : q);
        return scale == 0.0f ? 0.0f : c;
    }

    template <bool ASYM>
    QL_INLINE float fake(float x) const {
        const float v = (code<ASYM>(x) - zp) * scale;
        return is_nan_bits(x) ? x : v;
    }

    float fake(float x) const { return asym ? fake<true>(x) : fake<false>(x); }

    uint8_t encode(float x) const {
        if (is_nan_bits(x)) return static_cast<uint8_t>(static_cast<int>(zp));
        return static_cast<uint8_t>(static_cast<int>(asym ? code<true>(x) : code<false>(x)));
    }

    float decode(uint8_t c) const {
        const float q = asym ? static_cast<float>(c) : static_cast<float>(static_cast<int8_t>(c));
        return (q - zp) * scale;
    }
};

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
    if (!f.asymmetric) {
        uint32_t m = 0;
        for (int64_t i = 0; i < n; ++i) {
            const uint32_t a = finite_magnitude_bits(x[i]);
            m = a > m ? a : m;
        }
        return int_params_for_range(-bits_float(m), bits_float(m), f);
    }
    int32_t lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t k = sortable_key(finite_or_zero(x[i]));
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    return int_params_for_range(from_sortable_key(lo), from_sortable_key(hi), f);
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

IntParams int_params_for_range(float lo, float hi, IntFormat f) {
    IntParams p;
    if (!f.asymmetric) {
        const float amax = -lo > hi ? -lo : hi;
        p.scale = amax / static_cast<float>((1 << (f.bits - 1)) - 1);
        return p;
    }
    const float levels = static_cast<float>((1 << f.bits) - 1);
    const float mn = lo < 0.0f ? lo : 0.0f;
    const float mx = hi > 0.0f ? hi : 0.0f;
    float scale = (mx - mn) / levels;
    const float tiny = 1.17549435e-38f;  // 2^-126
    scale = scale < tiny ? tiny : scale;
    float zp = -rne_small(mn / scale);  // mn / scale in [-levels, 0]
    zp = zp < 0.0f ? 0.0f : (zp > levels ? levels : zp);
    p.scale = scale;
    p.zero_point = zp + 0.0f;  // no -0.0
    return p;
}

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
    for_each_channel_run(
        L,
        [&](int64_t c, int64_t off, int64_t n) {
            const IntStep s = IntStep::make(params[c], f);
            for (int64_t i = 0; i < n; ++i) codes[off + i] = s.encode(x[off + i]);
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
            for (int64_t i = 0; i < n; ++i) y[off + i] = s.decode(codes[off + i]);
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
        L, [&](int64_t, int64_t n, int64_t off) { fake_groups(x + off, y + off, n, L.block, f); },
        [&](int64_t, int64_t off, int64_t len) {
            fake_span(x + off, y + off, len, IntStep::make(group_params(x + off, len, f), f));
        });
}

void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params) {
    auto one = [&](int64_t b, int64_t off, int64_t len) {
        params[b] = group_params(x + off, len, f);
        const IntStep s = IntStep::make(params[b], f);
        for (int64_t i = 0; i < len; ++i) codes[off + i] = s.encode(x[off + i]);
    };
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            for (int64_t b = 0; b < n; ++b) one(b0 + b, off + b * L.block, L.block);
        },
        one);
}

void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f,
                       float* y) {
    auto one = [&](int64_t b, int64_t off, int64_t len) {
        const IntStep s = IntStep::make(params[b], f);
        for (int64_t i = 0; i < len; ++i) y[off + i] = s.decode(codes[off + i]);
    };
    for_each_block(
        L,
        [&](int64_t b0, int64_t n, int64_t off) {
            for (int64_t b = 0; b < n; ++b) one(b0 + b, off + b * L.block, L.block);
        },
        one);
}

}  // namespace ql::kernels
