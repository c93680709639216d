// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quant_plan.h"

#include "engine/core/errors.h"

namespace ql {
namespace {

QuantSpec resolve_for(const QuantizerSettings& s, const std::vector<int64_t>& shape, const std::string& what,
                      const std::string& source) {
    if (!s.enabled) return QuantSpec{};
    if (s.options.format.empty()) throw UserError(source + ": " + what + " is enabled but no entry gives it a format");
    try {
        return resolve_spec(s.options, shape);
    } catch (const UserError& e) {
        throw UserError(source + ": " + what + ": " + e.what());
    }
}

}  // namespace

std::vector<int64_t> weight_matrix_shape(const QuantizableLayer& layer) {
    const at::Tensor& w = layer.weight;
    return {w.size(0), w.numel() / std::max<int64_t>(w.size(0), 1)};
}

int64_t input_features(const QuantizableLayer& layer) {
    if (const auto* conv = dynamic_cast<const Conv2dLayer*>(&layer)) return conv->weight.size(1) * conv->groups;
    return layer.weight.size(1);
}

std::vector<LayerQuantPlan> plan_recipe(const Recipe& recipe, const Model& model) {
    std::vector<LayerQuantPlan> plans;
    std::vector<bool> used(recipe.quant_cfg.size(), false);
    for (QuantizableLayer* layer : model.quantizable_layers()) {
        if (layer->kind() == LayerKind::Embedding) continue;
        LayerQuantPlan p;
        p.layer = layer;
        const std::string wname = layer->name + ".weight_quantizer", iname = layer->name + ".input_quantizer";
        for (size_t i = 0; i < recipe.quant_cfg.size(); ++i) {
            const RecipeEntry& e = recipe.quant_cfg[i];
            if (glob_match(e.quantizer_name, wname)) {
                e.patch.apply_to(p.weight);
                used[i] = true;
            }
            if (glob_match(e.quantizer_name, iname)) {
                e.patch.apply_to(p.input);
                used[i] = true;
            }
        }
        const std::vector<int64_t> wshape = weight_matrix_shape(*layer);
        const int64_t in = input_features(*layer);
        p.weight_spec = resolve_for(p.weight, wshape, "layer " + layer->name + " weight quantizer", recipe.source);
        if (p.weight.enabled && p.weight.dynamic)
            throw UserError(recipe.source + ": layer " + layer->name + " weight quantizer: \"dynamic\" applies to input quantizers only");
        p.input_spec = resolve_for(p.input, {1, in}, "layer " + layer->name + " input quantizer", recipe.source);
        if (p.input.enabled && p.input_spec.granularity == Granularity::Channel)
            throw UserError(recipe.source + ": layer " + layer->name +
                            " input quantizer: per-channel activation scales are not supported (use tensor, group or a block format)");
        plans.push_back(std::move(p));
    }
    for (size_t i = 0; i < recipe.quant_cfg.size(); ++i) {
        const RecipeEntry& e = recipe.quant_cfg[i];
        if (used[i] || !e.patch.configures()) continue;
        std::string example = plans.empty() ? "" : " (its quantizers are named like '" + plans.front().layer->name + ".weight_quantizer')";
        throw UserError(recipe.source + ": quant_cfg[" + std::to_string(i) + "].quantizer_name '" + e.quantizer_name +
                        "' matches no quantizer of the model" + example);
    }
    return plans;
}

}  // namespace ql
