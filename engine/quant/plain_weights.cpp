// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/plain_weights.h"

namespace ql {

std::string plain_weights_refusal(const QuantizedModel& q) {
    for (const QuantizableLayer* layer : q.model().quantizable_layers())
        if (layer->input_rotation)
            return layer->name + " has an online Hadamard rotation of its input (rotation " +
                   (q.recipe().rotation.method == "rht" ? std::string("rht") : std::string("down_proj")) +
                   "), which the layout cannot hold";
    for (const auto& kv : q.kv_caches())
        if (kv->rotates_qk())
            return kv->name() + " rotates Q and K online before its KV cache (rotation qk / kv_cache rotate), which the "
                                "layout cannot hold";
    return "";
}

}  // namespace ql
