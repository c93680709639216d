// SPDX-License-Identifier: GPL-3.0-or-later
// Inference with fake-quantized weights quantizes each weight once instead of in every forward
// pass: for its lifetime, every layer of the model with a weight quantizer uses the quantized
// weight computed at construction (QuantizableLayer::frozen_weight). For text generation, which
// runs one forward per token, and evaluation. Weights and quantizers must not change meanwhile
// (no training step, no recalibration); the frozen copies cost one quantized weight per layer.
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class FrozenEffectiveWeights {
public:
    explicit FrozenEffectiveWeights(Model& model);
    ~FrozenEffectiveWeights();
    FrozenEffectiveWeights(const FrozenEffectiveWeights&) = delete;
    FrozenEffectiveWeights& operator=(const FrozenEffectiveWeights&) = delete;

private:
    std::vector<QuantizableLayer*> frozen_;
};

}  // namespace ql
