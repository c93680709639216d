// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quant_plan.h"

#include <optional>

#include "engine/core/errors.h"
#include "engine/io/gguf_kernel_types.h"
#include "engine/io/gguf_shape_fallback.h"

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

// A GGUF weight format whose blocks do not fit the rows: the type llama-quantize writes for such
// a tensor (Q6_K -> Q8_0, Q4_K -> Q5_0, ...), so that the fake quantization is what the file holds.
// Returns why the format changed, "" when it did not.
std::string apply_gguf_shape_fallback(QuantizerSettings& s, int64_t cols) {
    const std::string& format = s.options.format;
    if (!s.enabled || format.rfind("gguf_", 0) != 0) return "";
    const std::optional<GgmlType> t = ggml_type_from_name(format.substr(5));
    if (!t) return "";  // resolve_spec names the unknown format
    std::string why;
    const GgmlType r = gguf_shape_fallback(cols, *t, why);
    if (r == *t) return "";
    const std::string name = r == GgmlType::F16 ? "fp16" : gguf_format_name(r);
    why = "llama.cpp's fallback for " + format + ": rows of " + std::to_string(cols) + " are not a multiple of " +
          std::to_string(ggml_block_size(*t)) + (r == GgmlType::F16 ? " nor of its fallback type's block" : "");
    s.options.format = name;
    return why;
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
        p.weight_fallback = apply_gguf_shape_fallback(p.weight, wshape.back());
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
