// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantized_model_device.h"

#include <utility>
#include <vector>

#include "engine/models/model_device.h"
#include "engine/quant/quantized_model.h"

namespace ql {

void move_quantized_model(QuantizedModel& quantized, at::Device device) {
    if (model_device(quantized.model()) == device) return;
    std::vector<std::pair<LayerQuantizer*, at::Tensor>> pinned;
    for (const auto& l : quantized.layers())
        if (l->weight_pinned()) pinned.emplace_back(l.get(), l->quantized_weight());
    move_model(quantized.model(), device);
    // set_pre_quant_scale and pin_quantized_weight put their tensors on the weight's device.
    for (const auto& l : quantized.layers())
        if (l->pre_quant_scale().defined()) l->set_pre_quant_scale(l->pre_quant_scale());
    for (auto& [l, q] : pinned) l->pin_quantized_weight(q);
}

}  // namespace ql
