// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/mlp_model.h"

#include <ATen/ops/relu.h>

#include "engine/core/errors.h"

namespace ql {

MlpModel::MlpModel(ModelConfig config) : Model(std::move(config)) {
    const ModelConfig& c = config_;
    int64_t in = c.input_size;
    for (int64_t i = 0; i <= c.num_layers; ++i) {
        const bool last = i == c.num_layers;
        const int64_t out = last ? c.num_classes : c.hidden_size;
        fc_.emplace_back();
        add_linear(fc_.back(), "fc" + std::to_string(i + 1), in, out, true, Init::FanInUniform);
        in = out;
    }
}

at::Tensor MlpModel::forward(const at::Tensor& inputs) {
    const ModelConfig& c = config_;
    const std::string what = c.name.empty() ? "mlp" : c.name;
    if (!inputs.is_floating_point() || inputs.dim() < 2 || inputs[0].numel() != c.input_size)
        throw UserError(what + ": inputs must be float [batch, " + std::to_string(c.input_size) + "]");
    at::Tensor x = inputs.reshape({inputs.size(0), c.input_size}).to(at::kFloat);
    for (size_t i = 0; i < fc_.size(); ++i) {
        x = fc_[i].forward(x);
        if (i + 1 < fc_.size()) x = at::relu(x);
    }
    return x;
}

}  // namespace ql
