// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/straight_through.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>

#include "engine/formats/tensor_quantize.h"
#include "engine/quant/saturation_mask.h"

namespace ql {

at::Tensor fake_quantize_ste(const at::Tensor& x, const QuantSpec& spec, const SteOptions& options) {
    const at::Tensor xd = x.detach();
    const at::Tensor q = fake_quantize(xd, spec);
    if (!x.requires_grad() || !at::GradMode::is_enabled()) return q;
    // Validate and build the mask before anything is recorded on the tape.
    at::Tensor pass = at::isfinite(xd);
    if (options.clip_gradient) pass = pass.logical_and(saturated_elements(xd, spec).logical_not());
    const at::Tensor xf = x.to(at::kFloat);  // differentiable; the identity for float32
    // where(pass, +0, +0) is +0 everywhere; its gradient w.r.t. xf is -1 where pass, else 0.
    const at::Tensor zero_with_gradient = at::where(pass, xf.detach() - xf, 0);
    return q - zero_with_gradient;
}

}  // namespace ql
