// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/straight_through.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

#include "engine/formats/tensor_quantize.h"
#include "engine/quant/saturation_mask.h"

namespace ql {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One autograd node per quantizer call: the forward is the fused kernel alone and the backward one
// masked copy at most. (The composed form q - where(pass, x.detach() - x, 0) recorded four
// element-wise ops and their backwards, which cost more than the fused kernel itself: issue 22.)
struct StraightThrough : torch::autograd::Function<StraightThrough> {
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const QuantSpec* spec, bool clip_gradient) {
        at::Tensor pass;
        if (clip_gradient) {
            pass = at::isfinite(x).logical_and_(saturated_elements(x, *spec).logical_not());
        } else if (!std::isfinite(at::sum(x, at::kDouble).item<double>())) {
            // A non-finite sum means a NaN / Inf element (or, rarely, a sum too large for a double):
            // only then is the mask needed. One reduction instead of a mask pass on every call.
            pass = at::isfinite(x);
        }
        ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
        if (pass.defined()) ctx->save_for_backward({pass});
        return fake_quantize(x, *spec);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        at::Tensor g = grad_outputs[0];
        const variable_list saved = ctx->get_saved_variables();
        if (!saved.empty()) g = at::where(saved[0], g, at::zeros({}, g.options()));
        const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
        return {g.to(dtype), at::Tensor(), at::Tensor()};
    }
};

}  // namespace

at::Tensor fake_quantize_ste(const at::Tensor& x, const QuantSpec& spec, const SteOptions& options) {
    if (!x.requires_grad() || !at::GradMode::is_enabled()) return fake_quantize(x.detach(), spec);
    return StraightThrough::apply(x, &spec, options.clip_gradient);
}

}  // namespace ql
