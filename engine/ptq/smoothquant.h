// SPDX-License-Identifier: GPL-3.0-or-later
// SmoothQuant smoothing factors (Xiao et al., "SmoothQuant: Accurate and Efficient
// Post-Training Quantization for Large Language Models", ICML 2023, eq. 4), computed as the
// reference implementation does (mit-han-lab/smoothquant, smoothquant/smooth.py, smooth_ln_fcs):
//
//   w_j = max(max_i max_k |W_i[k, j]|, 1e-5)
//   s_j = max(act_j^alpha / w_j^(1 - alpha), 1e-5)          (float32, torch.pow semantics)
//
// act_j itself is NOT clamped (the reference clamps the weight maxima and the final scale only);
// an all-zero activation channel therefore gets s_j = 1e-5 for alpha > 0, and alpha = 0 gives
// s_j = 1 / w_j exactly, alpha = 1 gives s_j = max(act_j, 1e-5) exactly.
//
// Applying them keeps the layer exact in real arithmetic: X' = X / s (per input channel j),
// W_i' = W_i * s (column j of every weight), so X' W_i'^T = X W_i^T. The caller folds 1/s into
// the preceding norm's weight (and bias) or keeps it as the input quantizer's pre_quant_scale:
// in Model Optimizer's convention (x * pre_quant_scale) that is pre_quant_scale = 1 / s.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace ql {

// act_channel_amax: [in], max |x_j| per input channel over the calibration data (any floating
// dtype, >= 0, finite). weights: the Linear weights [out_i, in] that read this input (at least
// one). alpha in [0, 1] (the paper's migration strength; 0.5 by default in the reference).
// Returns s: float32 [in], every entry >= 1e-5. UserError on shape / dtype / value problems.
at::Tensor smoothquant_scales(const at::Tensor& act_channel_amax, const std::vector<at::Tensor>& weights, double alpha);

}  // namespace ql
