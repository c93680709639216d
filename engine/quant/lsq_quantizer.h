// SPDX-License-Identifier: GPL-3.0-or-later
// LSQ: symmetric integer fake quantization with a learnable step size (Esser, McKinstry, Bablani,
// Appuswamy and Modha, "Learned Step Size Quantization", ICLR 2020). LSQ+'s learnable offset for
// asymmetric ranges is out of scope.
//   forward:  q = clamp(rne(x / s), -Q, Q) * s,  Q = 2^(b-1) - 1  (FORMATS.md "Integers")
//   backward: dq/dx = 1 where |x / s| <= Q, else 0;
//             dq/ds = rne(x / s) - x / s where |x / s| <= Q, else -Q (x / s < -Q) or +Q (x / s > Q)
//             (the paper's eq. 3), multiplied by the gradient scale g = 1 / sqrt(N * Q), N the
//             number of elements sharing the scale (the paper's section 2.2; computed in double,
//             rounded to float32).
// All in float32, in that order (x / s, then rne, clamp, * s), which is the order of the integer
// kernels (kernels/integer_step.h), so the forward at the initial scale equals fake_quantize.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/formats/format_codec.h"

namespace ql {

class LsqQuantizer {
public:
    // spec: a symmetric integer format (int8 / int4 / int3 / int2) resolved for initial_weight's
    // shape, per tensor, per channel (spec.axis; axis 0 of an [out, in] weight) or per group of
    // spec.block elements along the last dimension. The scale starts at the spec's own rule,
    // amax / Q (fixed_amax for a per-tensor spec that has one, else the finite amax of the tensor,
    // channel or group), so forward(initial_weight) == fake_quantize(initial_weight, spec) bit for
    // bit. Throws UserError for other formats, asymmetric specs, non-float or empty weights and
    // specs that do not fit the shape.
    LsqQuantizer(const QuantSpec& spec, const at::Tensor& initial_weight);

    // x: float tensor of the initial weight's shape (UserError otherwise), any dtype (made
    // float32). Returns float32 of that shape, differentiable in x and in scale(). Where a scale is
    // 0 (an all-zero channel at initialisation) the output is 0 and no gradient flows, as the
    // kernels do. NaN elements stay NaN and pass no gradient. The scale should stay positive;
    // nothing clamps it.
    at::Tensor forward(const at::Tensor& x) const;

    // The learnable step sizes: a float32 leaf with requires_grad, on the weight's device. Shape:
    // [1] per tensor, [C] per channel (C = size of the channel axis), the weight's shape with the
    // last dimension replaced by (last / group) per group -- the layout encode_buffer uses.
    at::Tensor& scale() { return scale_; }
    const at::Tensor& scale() const { return scale_; }

    int64_t qmax() const { return qmax_; }
    // g = 1 / sqrt(N * Q), float32.
    float gradient_scale() const { return gradient_scale_; }

private:
    QuantSpec spec_;
    std::vector<int64_t> shape_;    // the weight's shape
    std::vector<int64_t> grouped_;  // x viewed so that each scale broadcasts over its elements
    std::vector<int64_t> scale_view_;
    int64_t qmax_ = 0;
    float gradient_scale_ = 0.0f;
    at::Tensor scale_;
};

}  // namespace ql
