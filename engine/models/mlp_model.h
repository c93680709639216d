// SPDX-License-Identifier: GPL-3.0-or-later
// A teaching MLP: fc1 .. fc{num_layers} of width hidden_size with ReLU, then the classifier
// fc{num_layers + 1} (PyTorch nn.Linear layout and default init; no HF counterpart).
// builtin_models.h: 784-256-256-10 for 28x28 digits.
#pragma once

#include <deque>

#include "engine/models/model.h"

namespace ql {

class MlpModel : public Model {
public:
    explicit MlpModel(ModelConfig config);
    // inputs [B, input_size] float32 (or [B, ...] flattening to input_size) -> logits [B, classes].
    at::Tensor forward(const at::Tensor& inputs) override;

private:
    std::deque<LinearLayer> fc_;  // a deque: registered layers must not move
};

}  // namespace ql
