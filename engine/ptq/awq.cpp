// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/awq.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/formats/tensor_values.h"

namespace ql {
namespace {

// torch.finfo(torch.float32).tiny, which Model Optimizer adds to avoid dividing by zero.
constexpr float kTiny = std::numeric_limits<float>::min();
// Model Optimizer's awq_lite clamps the scales to [1e-4, 1e4] (get_scale).
constexpr double kScaleMin = 1e-4;
constexpr double kScaleMax = 1e4;
// Output rows per batched matmul in the clip search (bounds the [groups, rows, chunk] buffer).
constexpr int64_t kClipRowChunk = 256;

at::Tensor checked_matrix(const at::Tensor& t, const char* name) {
    if (!t.defined() || !t.is_floating_point() || t.dim() != 2)
        throw UserError(std::string("awq: ") + name + " must be a 2-D floating-point tensor, got " +
                        (t.defined() ? shape_text(t) + " " + std::string(t.dtype().name()) : std::string("undefined")));
    if (t.size(0) == 0 || t.size(1) == 0) throw UserError(std::string("awq: ") + name + " is empty " + shape_text(t));
    at::Tensor f = t.detach().to(at::kFloat).contiguous();  // stays on its device (the model's)
    if (!at::isfinite(f).all().item<bool>()) throw UserError(std::string("awq: ") + name + " holds NaN/Inf");
    return f;
}

// Group size along the input dimension: the quantizer's block, or the whole row.
int64_t awq_group(const QuantSpec& spec, int64_t in) { return spec.block > 0 ? spec.block : in; }

at::Tensor pad_columns(const at::Tensor& t, int64_t g) {
    const int64_t r = t.size(1) % g;
    return r == 0 ? t : at::constant_pad_nd(t, {0, g - r}, 0);
}

// Model Optimizer's get_weight_scale: |W| normalised by its group amax, averaged over rows.
at::Tensor awq_weight_scale(const at::Tensor& w, int64_t g) {
    const int64_t out = w.size(0), in = w.size(1);
    const at::Tensor a = pad_columns(w, g).abs().view({out, -1, g});
    const at::Tensor amax = std::get<0>(a.max(2, /*keepdim=*/true));
    return (a / (amax + kTiny)).view({out, -1}).narrow(1, 0, in).mean(0);
}

// Model Optimizer's get_scale (without tensor-parallel averaging).
at::Tensor awq_scale(const at::Tensor& act_scale, const at::Tensor& weight_scale, double alpha) {
    const at::Tensor s = (act_scale.pow(alpha) / (weight_scale.pow(1.0 - alpha) + kTiny)).clamp(kScaleMin, kScaleMax);
    return s / (s.max() * s.min()).sqrt();
}

// mean((x * pqs) @ Q(w)^T - ref)^2 over all elements, accumulated in double. pqs undefined: ones.
double layer_loss(const at::Tensor& x, const at::Tensor& pqs, const at::Tensor& w, const QuantSpec& spec,
                  const at::Tensor& ref) {
    const at::Tensor xs = pqs.defined() ? x * pqs : x;
    const at::Tensor out = at::matmul(xs, fake_quantize(w, spec).t());
    return (out - ref).to(at::kDouble).pow(2).mean().item<double>();
}

struct ClipSearch {
    at::Tensor ratio;    // [out, groups]
    at::Tensor clipped;  // [out, in]
};

ClipSearch clip_search(const at::Tensor& w, const at::Tensor& xs, const QuantSpec& spec, const AwqOptions& o,
                       const CancellationToken& cancel) {
    const int64_t out = w.size(0), in = w.size(1), n = xs.size(0);
    const int64_t g = awq_group(spec, in);
    const int64_t stride = (n + o.clip_samples - 1) / o.clip_samples;
    const at::Tensor rows = xs.slice(0, 0, n, stride);
    const int64_t t = rows.size(0);
    const at::Tensor wp = pad_columns(w, g);
    const int64_t groups = wp.size(1) / g;
    const at::Tensor wv = wp.view({out, groups, g});
    const at::Tensor amax = std::get<0>(wv.abs().max(2));                                   // [out, G]
    const at::Tensor xg = pad_columns(rows, g).view({t, groups, g}).permute({1, 0, 2}).contiguous();  // [G, T, g]

    at::Tensor best_err = at::full({out, groups}, std::numeric_limits<float>::infinity(), w.options());
    at::Tensor best_ratio = at::ones({out, groups}, w.options());
    const int64_t steps = static_cast<int64_t>(std::floor(o.max_shrink * double(o.clip_grid) + 1e-9));
    for (int64_t k = 0; k <= steps; ++k) {
        cancel.throw_if_cancelled();
        const float r = static_cast<float>(1.0 - double(k) / double(o.clip_grid));
        const at::Tensor bound = (amax * r).unsqueeze(2);
        const at::Tensor wc = at::min(at::max(wv, -bound), bound).view({out, -1}).narrow(1, 0, in).contiguous();
        const at::Tensor delta = (pad_columns(fake_quantize(wc, spec), g) - wp).view({out, groups, g});
        at::Tensor err = at::empty({out, groups}, w.options());
        for (int64_t r0 = 0; r0 < out; r0 += kClipRowChunk) {
            cancel.throw_if_cancelled();
            const int64_t rn = std::min(kClipRowChunk, out - r0);
            const at::Tensor d = delta.narrow(0, r0, rn).permute({1, 2, 0});  // [G, g, rows]
            // Per-group partial outputs of the error: [G, T, rows] -> mean square over T.
            err.narrow(0, r0, rn).copy_(at::bmm(xg, d).pow(2).mean(1).t());
        }
        const at::Tensor better = err < best_err;
        best_err = at::where(better, err, best_err);
        best_ratio = at::where(better, at::full({}, r, w.options()), best_ratio);
    }
    const at::Tensor bound = (amax * best_ratio).unsqueeze(2);
    ClipSearch c;
    c.ratio = best_ratio;
    c.clipped = at::min(at::max(wv, -bound), bound).view({out, -1}).narrow(1, 0, in).contiguous();
    return c;
}

}  // namespace

AwqResult awq_search(const at::Tensor& weight, const at::Tensor& x_samples, const QuantSpec& spec,
                     const AwqOptions& options, const CancellationToken& cancel) {
    if (spec.info == nullptr) throw UserError("awq: the weight quantizer has no format");
    if (options.grid < 0) throw UserError("awq: grid must be >= 0, got " + std::to_string(options.grid));
    if (options.clip_grid < 1) throw UserError("awq: clip_grid must be >= 1, got " + std::to_string(options.clip_grid));
    if (!(options.max_shrink >= 0 && options.max_shrink < 1))
        throw UserError("awq: max_shrink must be in [0, 1), got " + std::to_string(options.max_shrink));
    if (options.clip_samples < 1)
        throw UserError("awq: clip_samples must be >= 1, got " + std::to_string(options.clip_samples));
    const at::Tensor w = checked_matrix(weight, "weight");
    const at::Tensor x = checked_matrix(x_samples, "x_samples").to(w.device());
    if (x.size(1) != w.size(1))
        throw UserError("awq: x_samples " + shape_text(x) + " must have " + std::to_string(w.size(1)) +
                        " columns, the weight's input dimension " + shape_text(w));
    cancel.throw_if_cancelled();

    const int64_t in = w.size(1);
    const at::Tensor ref = at::matmul(x, w.t());
    AwqResult r;
    r.loss_before = layer_loss(x, at::Tensor(), w, spec, ref);

    // Scale search.
    const at::Tensor act_scale = x.abs().mean(0);
    const at::Tensor weight_scale = awq_weight_scale(w, awq_group(spec, in));
    double best = std::numeric_limits<double>::infinity();
    at::Tensor best_pqs;
    for (int64_t k = 0; k < options.grid; ++k) {
        cancel.throw_if_cancelled();
        const double alpha = double(k) / double(options.grid);
        const at::Tensor pqs = 1.0 / awq_scale(act_scale, weight_scale, alpha);
        const double loss = layer_loss(x, pqs, w * (1.0 / pqs), spec, ref);
        r.alpha_losses.push_back(loss);
        if (loss < best) {
            best = loss;
            best_pqs = pqs;
            r.best_alpha = alpha;
        }
    }
    at::Tensor pqs;  // undefined: ones
    at::Tensor scaled = w;
    r.kept_rtn = !(best < r.loss_before);
    if (r.kept_rtn) {
        r.loss_scaled = r.loss_before;
    } else {
        pqs = best_pqs;
        scaled = w * (1.0 / pqs);
        r.loss_scaled = best;
    }
    r.pre_quant_scale = pqs.defined() ? pqs.contiguous() : at::ones({in}, w.options());
    r.weight = scaled.contiguous();
    r.loss_after = r.loss_scaled;

    const int64_t groups = (in + awq_group(spec, in) - 1) / awq_group(spec, in);
    r.clip_ratio = at::ones({w.size(0), groups}, w.options());
    if (options.clip_search) {
        const at::Tensor xs = pqs.defined() ? x * pqs : x;
        ClipSearch c = clip_search(scaled, xs, spec, options, cancel);
        r.clip_ratio = c.ratio;
        const double loss = layer_loss(x, pqs, c.clipped, spec, ref);
        if (loss <= r.loss_scaled) {
            r.weight = c.clipped;
            r.loss_after = loss;
            r.clip_applied = true;
        }
    }
    return r;
}

}  // namespace ql
