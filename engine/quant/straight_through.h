// SPDX-License-Identifier: GPL-3.0-or-later
// Differentiable fake quantization with a straight-through estimator (Bengio, Leonard and
// Courville 2013, "Estimating or Propagating Gradients Through Stochastic Neurons"; what Model
// Optimizer's QAT does, shared/design/QAT.md): the forward value is fake_quantize(x, spec) bit for
// bit, the backward treats the quantizer as the identity -- optionally zero where x saturates.
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/formats/format_codec.h"

namespace ql {

struct SteOptions {
    // Pass no gradient where x lies outside the quantizer's representable range
    // (saturated_elements, saturation_mask.h); Model Optimizer's backward does this for amax-based
    // quantizers. Throws UserError for GGUF formats, where the range is not modelled.
    bool clip_gradient = false;
};

// y = fake_quantize(x, spec): float32, x's shape and device, bit for bit (signed zeros and all).
// dL/dx = dL/dy (cast back to x's dtype), times 0 where clip_gradient finds x saturated.
// Non-finite elements of x get zero gradient (as they had when the estimator was composed of
// element-wise ops, where x - x is NaN). x: any float dtype; when it does not require grad or grad
// mode is off, this is exactly fake_quantize(x, spec).
//
// The forward returns fake_quantize(x) itself from one custom autograd node, so it is exact by
// construction; the backward is the incoming gradient, masked only where a mask is needed
// (clip_gradient, or x holding NaN / Inf). spec must outlive the call (not the backward).
at::Tensor fake_quantize_ste(const at::Tensor& x, const QuantSpec& spec, const SteOptions& options = {});

}  // namespace ql
