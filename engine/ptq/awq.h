// SPDX-License-Identifier: GPL-3.0-or-later
// AWQ for one Linear layer: activation-aware per-input-channel scaling plus weight clipping
// (Lin et al., "AWQ: Activation-aware Weight Quantization for LLM Compression and
// Acceleration", MLSys 2024). The scale search follows NVIDIA Model Optimizer's awq_lite and
// the clip search its awq_clip (modelopt/torch/quantization/model_calib.py, 0.47); llm-awq's
// auto_scale.py / auto_clip.py are the original.
//
// Convention (Model Optimizer's QuantLinear and EXPORT.md "INT4 AWQ"):
//     y = (x * pre_quant_scale) @ Q(weight)^T
// i.e. pre_quant_scale MULTIPLIES the input; weight = W * (1 / pre_quant_scale) (then clipped).
// With s the AWQ scale, pre_quant_scale = 1 / s and weight = W * s: salient input channels get
// s > 1 (their weights are enlarged before quantization, their inputs shrunk). In full precision
// the layer is unchanged up to float rounding.
//
// Scale search (awq_lite), float32:
//   act_scale[j]    = mean over rows of |x[:, j]|
//   weight_scale[j] = mean over output rows of |W[o, j]| / (amax of W[o, j]'s group + FLT_MIN),
//                     groups = the spec's block along the input dimension (int group size,
//                     NVFP4 16, MX 32, NF4 64, GGUF 32; a zero-padded tail group as Model
//                     Optimizer pads); per-tensor / per-channel specs use the whole row
//   s(alpha)        = clamp(act_scale^alpha / (weight_scale^(1-alpha) + FLT_MIN), 1e-4, 1e4),
//                     then s /= sqrt(max(s) * min(s))
//   alpha           = k / grid, k = 0 .. grid-1 (llm-awq's grid; Model Optimizer steps 0.1 up to
//                     and including 1.0)
//   loss(alpha)     = mean over rows and outputs of ((x * pqs) @ Q(W * (1/pqs))^T - x @ W^T)^2
//                     with pqs = 1 / s(alpha)
// The best alpha is the first one with the smallest loss. Model Optimizer's alpha = 0 is
// s = 1 / weight_scale, not s = 1, so plain RTN (s = 1) is evaluated separately (loss_before)
// and kept when no grid point beats it: AWQ is never worse than RTN on the calibration rows.
//
// Clip search (awq_clip), on the scaled weight W' and scaled inputs x' = x * pqs, using at most
// clip_samples rows of x (every ceil(n / clip_samples)-th row from row 0, as Model Optimizer
// strides its tokens): ratios r = 1 - k / clip_grid for k = 0 .. floor(max_shrink * clip_grid)
// (default 1, 0.95, ..., 0.5: Model Optimizer's set). For each r, every group of W' is clamped to
// [-r * group_amax, r * group_amax] and quantized; the error of (row o, group g) is
// mean over rows t of (sum_{j in g} x'[t, j] * (Q(W'_r)[o, j] - W'[o, j]))^2. Each (o, g) takes the
// ratio with the smallest error (ties keep the larger ratio; r = 1 first). Groups are as for
// weight_scale (whole rows for per-tensor / per-channel specs). With NVFP4 the clamp also lowers
// the tensor amax (its global scale), as all groups are clamped together during the search.
// Because per-group errors do not add up exactly to the layer error, the clipped weight is kept
// only if it does not raise the layer loss on all calibration rows (clip_applied says whether).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/formats/format_codec.h"
#include "engine/jobs/job.h"

namespace ql {

struct AwqOptions {
    int64_t grid = 20;            // alpha grid points (0: no scale search, clip only)
    bool clip_search = true;
    int64_t clip_grid = 20;       // ratio step 1 / clip_grid
    double max_shrink = 0.5;      // in [0, 1): ratios go down to 1 - floor(max_shrink * clip_grid) / clip_grid
    int64_t clip_samples = 512;   // input rows used by the clip search
};

struct AwqResult {
    // [in] float32: the layer computes (x * pre_quant_scale) @ weight'^T (Model Optimizer's
    // layout; all ones when RTN was kept).
    at::Tensor pre_quant_scale;
    // [out, in] float32: W * (1 / pre_quant_scale), clipped when clip_applied; NOT quantized
    // (the layer's weight quantizer quantizes it).
    at::Tensor weight;
    double best_alpha = 0;            // grid alpha with the lowest loss (applied unless kept_rtn)
    bool kept_rtn = false;            // no grid point beat s = 1: pre_quant_scale is all ones
    double loss_before = 0;           // RTN: mean((x @ Q(W)^T - x @ W^T)^2)
    double loss_scaled = 0;           // after the scale search, before clipping
    double loss_after = 0;            // the returned layer (<= loss_scaled <= loss_before)
    std::vector<double> alpha_losses;  // loss(k / grid), k = 0 .. grid-1
    bool clip_applied = false;
    // [out, groups] float32: the clip ratio chosen per (output row, group) by the search (all 1
    // when clip_search is off); applied to `weight` only when clip_applied.
    at::Tensor clip_ratio;
};

// weight: [out, in] floating; x_samples: [n, in] floating calibration inputs of this layer
// (n >= 1; the caller passes a subsample); spec: the weight quantizer, resolved for [out, in]
// (e.g. int4 group 128, nvfp4, mxfp4, nf4). Both tensors must be finite. Calls
// cancel.throw_if_cancelled() between grid points, clip ratios and row chunks. UserError on bad
// shapes, dtypes, options or non-finite values.
AwqResult awq_search(const at::Tensor& weight, const at::Tensor& x_samples, const QuantSpec& spec,
                     const AwqOptions& options, const CancellationToken& cancel);

}  // namespace ql
