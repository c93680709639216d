// SPDX-License-Identifier: GPL-3.0-or-later
// FP8 with a float32 scale per tensor or channel, per element (formulas in scaled_fp8.h): what the
// CPU kernels (scaled_fp8.cpp) and the CUDA kernels (cuda/scaled_fp8.cu) both run.
#pragma once

#include "kernels/minifloat.h"
#include "kernels/scaled_fp8.h"

namespace ql::kernels {

// Calls v(E4M3{}) or v(E5M2{}).
template <class Visitor>
void visit_fp8_kind(Fp8Kind k, const Visitor& v) {
    if (k == Fp8Kind::E4M3)
        v(E4M3{});
    else
        v(E5M2{});
}

// amax / max, or 1 when that is 0 (an all-zero tensor or channel).
QL_HD float fp8_scale_of(float amax, float max_value) {
    const float s = amax / max_value;
    return s == 0.0f ? 1.0f : s;
}

// Fake quantization of one element: x / scale rounded onto F's grid (saturating), times scale;
// NaN stays NaN.
template <class F>
QL_HD float fp8_fake_element(float x, float scale) {
    const float q = round_to_grid<F>(abs_bits(x / scale)) * scale;
    return is_nan_bits(x) ? x : copy_sign_of(q, x);
}

// The same for a positive scale (every scale fp8_scale_of gives from a finite amax): q >= 0, so
// x's sign bit is or-ed in.
template <class F>
QL_HD float fp8_fake_element_positive_scale(float x, float scale) {
    const float q = round_to_grid<F>(abs_bits(x / scale)) * scale;
    return is_nan_bits(x) ? x : with_sign_of(q, x);
}

template <class F>
QL_HD uint8_t fp8_encode_element(float x, float scale) {
    return static_cast<uint8_t>(encode_element<F>(x / scale));
}

template <class F>
QL_HD float fp8_decode_element(uint8_t code, float scale) {
    return decode_element<F>(code) * scale;
}

// The three maps as element-wise ops with a parameter per channel, the interface both drivers
// take (cuda/block_drivers.cuh run_channel_map; the CPU's in scaled_fp8.cpp): In, Out, Param,
// param(channel), apply(element, param). scales: one float per channel.
struct Fp8ChannelScales {
    const float* scales;
    using Param = float;
    QL_HD float param(int64_t c) const { return scales[c]; }
};

template <class F>
struct Fp8FakeOp : Fp8ChannelScales {
    using In = float;
    using Out = float;
    QL_HD float apply(float x, float scale) const { return fp8_fake_element<F>(x, scale); }
};

template <class F>
struct Fp8EncodeOp : Fp8ChannelScales {
    using In = float;
    using Out = uint8_t;
    QL_HD uint8_t apply(float x, float scale) const { return fp8_encode_element<F>(x, scale); }
};

template <class F>
struct Fp8DecodeOp : Fp8ChannelScales {
    using In = uint8_t;
    using Out = float;
    QL_HD float apply(uint8_t code, float scale) const { return fp8_decode_element<F>(code, scale); }
};

}  // namespace ql::kernels
