// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/smoothquant.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <string>

#include "engine/core/errors.h"
#include "engine/formats/tensor_values.h"

namespace ql {
namespace {

// The reference's floor for weight maxima and scales (smooth.py: clamp(min=1e-5)).
constexpr double kSmoothQuantFloor = 1e-5;

}  // namespace

at::Tensor smoothquant_scales(const at::Tensor& act_channel_amax, const std::vector<at::Tensor>& weights, double alpha) {
    if (!(alpha >= 0.0 && alpha <= 1.0))
        throw UserError("smoothquant: alpha must be in [0, 1], got " + std::to_string(alpha));
    if (!act_channel_amax.defined() || !act_channel_amax.is_floating_point() || act_channel_amax.dim() != 1)
        throw UserError("smoothquant: act_channel_amax must be a 1-D floating-point tensor [in], got " +
                        (act_channel_amax.defined() ? shape_text(act_channel_amax) : std::string("undefined")));
    const int64_t in = act_channel_amax.size(0);
    if (in == 0) throw UserError("smoothquant: act_channel_amax is empty");
    const at::Tensor act = act_channel_amax.detach().to(at::kCPU).to(at::kFloat);
    if (!at::isfinite(act).all().item<bool>() || at::lt(act, 0).any().item<bool>())
        throw UserError("smoothquant: act_channel_amax must hold finite values >= 0 (max |x| per channel)");
    if (weights.empty()) throw UserError("smoothquant: at least one weight is needed");

    at::Tensor wmax;
    for (size_t i = 0; i < weights.size(); ++i) {
        const at::Tensor& w = weights[i];
        if (!w.defined() || !w.is_floating_point() || w.dim() != 2 || w.size(1) != in || w.size(0) == 0)
            throw UserError("smoothquant: weight " + std::to_string(i) + " must be a floating-point [out, " +
                            std::to_string(in) + "] tensor, got " + (w.defined() ? shape_text(w) : std::string("undefined")));
        const at::Tensor col = std::get<0>(w.detach().to(at::kCPU).to(at::kFloat).abs().max(0));
        if (!at::isfinite(col).all().item<bool>())
            throw UserError("smoothquant: weight " + std::to_string(i) + " holds NaN/Inf");
        wmax = wmax.defined() ? at::maximum(wmax, col) : col;
    }
    wmax = wmax.clamp_min(kSmoothQuantFloor);
    // Computed on the host (one value per input channel), returned where the statistics live
    // (the model's device) for the folding and pre_quant_scale that use it.
    return (act.pow(alpha) / wmax.pow(1.0 - alpha)).clamp_min(kSmoothQuantFloor).contiguous().to(act_channel_amax.device());
}

}  // namespace ql
