// SPDX-License-Identifier: GPL-3.0-or-later
// A Linear layer addressed by its HF name. Every quantizable layer of every model is one of
// these, so recipes, statistics and exports find layers by name (model.layers.3.mlp.down_proj).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

namespace ql {

struct LinearLayer {
    std::string name;   // HF module name, without ".weight"
    at::Tensor weight;  // [out, in] float32 (GPT-2's Conv1D weights are transposed on load)
    at::Tensor bias;    // [out] or undefined
    // Set by quantization (issue 4): applied to the weight and to the input in forward().
    // Empty = no quantization. They must be differentiable (straight-through) for training.
    std::function<at::Tensor(const at::Tensor&)> weight_quantizer;
    std::function<at::Tensor(const at::Tensor&)> input_quantizer;

    // y = quantize_input(x) @ quantize_weight(W)^T + b; x [..., in] -> [..., out].
    at::Tensor forward(const at::Tensor& x) const;
};

}  // namespace ql
