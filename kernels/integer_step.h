// SPDX-License-Identifier: GPL-3.0-or-later
// Uniform integer quantization of one element (formulas in integer_quant.h): IntStep, the
// quantizer the CPU kernels (integer_quant.cpp) and the CUDA kernels (cuda/integer_quant.cu)
// both run, and the scale and zero point of a range it is made from. The element functions are
// branch-free (selects only) so that the CPU loops vectorise.
#pragma once

#include <type_traits>

#include "kernels/integer_quant.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {

// One quantizer instance, with everything the element loop needs precomputed.
struct IntStep {
    float scale;      // > 0, or 0 for an all-zero symmetric range
    float inv_scale;  // 1 / scale (asymmetric only)
    float zp;
    float lo, hi;     // code range: [-qmax, qmax] or [0, 2^b - 1]
    bool asym;

    // int_params_for_range (integer_quant.h): symmetric uses amax = max(-lo, hi) of the finite
    // range [lo, hi] with lo <= 0 <= hi; asymmetric uses the range itself.
    QL_HD static IntParams params_for_range(float lo, float hi, IntFormat f) {
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

    // Per group: the range from the group's statistic (IntGroupStatistic below).
    QL_HD static IntParams params_for(const FiniteAbsmax& s, IntFormat f) {
        return params_for_range(-s.value(), s.value(), f);
    }
    QL_HD static IntParams params_for(const FiniteRange& s, IntFormat f) {
        return params_for_range(s.min_value(), s.max_value(), f);
    }

    QL_HD static IntStep make(const IntParams& p, IntFormat f) {
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

    // The integer code as a float (exact) for finite or infinite x; NaN for NaN x. The code
    // range's ends are integers, so clamping before the RNE is the same as clamping after, and
    // keeps the argument small (|.| <= 255) for rne_bounded.
    template <bool ASYM>
    QL_HD float code(float x) const {
        const float c = code_for_nonzero_scale<ASYM>(x);
        return !ASYM && scale == 0.0f ? 0.0f : c;
    }

    // code() for a quantizer whose scale is not 0 (always true when asymmetric); the CPU kernels
    // test a symmetric scale once per group or channel.
    template <bool ASYM>
    QL_HD float code_for_nonzero_scale(float x) const {
        // Two selects in a row, not nested: GCC makes each a vector min or max (NaN passes both,
        // as it did the nested form), where the nested form became three compares and two blends.
        const float a = ASYM ? lo - zp : lo, b = ASYM ? hi - zp : hi;
        float t = ASYM ? x * inv_scale : x / scale;
        t = t > b ? b : t;
        t = t < a ? a : t;
        return ASYM ? rne_bounded(t) + zp : rne_bounded(t);  // |t| <= 255
    }

    template <bool ASYM>
    QL_HD float fake(float x) const {
        const float v = (code<ASYM>(x) - zp) * scale;
        return is_nan_bits(x) ? x : v;
    }

    // fake() for a nonzero scale. Symmetric: zp is 0 and c - 0 == c for every c (-0 included),
    // so the subtraction is left out.
    template <bool ASYM>
    QL_HD float fake_for_nonzero_scale(float x) const {
        const float c = code_for_nonzero_scale<ASYM>(x);
        const float v = ASYM ? (c - zp) * scale : c * scale;
        return is_nan_bits(x) ? x : v;
    }

    QL_HD float fake(float x) const { return asym ? fake<true>(x) : fake<false>(x); }

    // Two's complement byte (symmetric) or unsigned byte (asymmetric); NaN -> the zero point.
    QL_HD uint8_t encode(float x) const {
        if (is_nan_bits(x)) return static_cast<uint8_t>(static_cast<int>(zp));
        return static_cast<uint8_t>(static_cast<int>(asym ? code<true>(x) : code<false>(x)));
    }

    QL_HD float decode(uint8_t c) const {
        const float q = asym ? static_cast<float>(c) : static_cast<float>(static_cast<int8_t>(c));
        return (q - zp) * scale;
    }
};

// What a group's parameters are computed from: max |x| (symmetric) or the range (asymmetric).
template <bool ASYM>
using IntGroupStatistic = std::conditional_t<ASYM, FiniteRange, FiniteAbsmax>;

}  // namespace ql::kernels
