// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/frozen_effective_weights.h"

#include <ATen/core/grad_mode.h>

namespace ql {

FrozenEffectiveWeights::FrozenEffectiveWeights(Model& model) {
    at::NoGradGuard no_grad;
    for (QuantizableLayer* layer : model.quantizable_layers()) {
        if (!layer->weight_quantizer || layer->frozen_weight.defined()) continue;
        layer->frozen_weight = layer->weight_quantizer(layer->weight);
        frozen_.push_back(layer);
    }
}

FrozenEffectiveWeights::~FrozenEffectiveWeights() {
    for (QuantizableLayer* layer : frozen_) layer->frozen_weight = at::Tensor();
}

}  // namespace ql
