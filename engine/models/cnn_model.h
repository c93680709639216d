// SPDX-License-Identifier: GPL-3.0-or-later
// A teaching CNN: conv1 (3x3, hidden_size channels, padding 1) - ReLU - 2x2 max pool -
// conv2 (3x3, 2 x hidden_size channels) - ReLU - 2x2 max pool - fc (classifier). PyTorch
// layouts and default init; no HF counterpart. builtin_models.h: 1x28x28 -> 10 classes.
#pragma once

#include "engine/models/model.h"

namespace ql {

class CnnModel : public Model {
public:
    explicit CnnModel(ModelConfig config);
    // images [B, C, S, S] float32 -> logits [B, classes].
    at::Tensor forward(const at::Tensor& images) override;

private:
    Conv2dLayer conv1_, conv2_;
    LinearLayer fc_;
};

}  // namespace ql
