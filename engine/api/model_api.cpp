// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/model_api.h"

#include <c10/core/ScalarType.h>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace {

std::string dtype_text(const at::Tensor& t) {
    switch (t.scalar_type()) {
        case at::kFloat: return "float32";
        case at::kHalf: return "float16";
        case at::kBFloat16: return "bfloat16";
        case at::kDouble: return "float64";
        default: return c10::toString(t.scalar_type());
    }
}

LayerSummary layer_summary(const QuantizableLayer& l) {
    LayerSummary ls;
    ls.name = l.name;
    ls.kind = layer_kind_name(l.kind());
    ls.weight_shape.assign(l.weight.sizes().begin(), l.weight.sizes().end());
    ls.has_bias = l.bias.defined();
    ls.parameters = l.weight.numel() + (l.bias.defined() ? l.bias.numel() : 0);
    return ls;
}

void describe_quantizers(LayerSummary& ls, const QuantizerSettings& weight, const QuantizerSettings& input,
                         const QuantSpec& weight_spec, const std::vector<int64_t>& matrix_shape) {
    ls.weight_quantizer = describe(weight, false);
    ls.input_quantizer = describe(input, true);
    if (weight.enabled && weight_spec.info) {
        ls.weight_format = weight.options.format;
        int64_t numel = 1;
        for (int64_t d : matrix_shape) numel *= d;
        ls.weight_bits = numel > 0 ? weight_storage_bits(weight_spec, matrix_shape) / static_cast<double>(numel) : 16;
    }
}

}  // namespace

std::vector<float> layer_weight_row(const std::string& model, const std::string& layer, int64_t row) {
    OpenedModel m = open_model(model);
    for (const QuantizableLayer* l : m.model->quantizable_layers()) {
        if (l->name != layer) continue;
        const std::vector<int64_t> shape = weight_matrix_shape(*l);
        if (row < 0 || row >= shape[0])
            throw UserError("layer " + layer + " has " + std::to_string(shape[0]) + " output channels; channel " +
                            std::to_string(row) + " does not exist");
        const at::Tensor w = l->weight.detach().reshape({shape[0], shape[1]})[row].to(at::kFloat).contiguous();
        return std::vector<float>(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
    }
    throw UserError("model " + m.path + " has no quantizable layer named '" + layer + "'");
}

std::vector<LayerSummary> plan_layer_formats(const std::string& model, const std::string& recipe_json,
                                             const std::string& source) {
    OpenedModel m = open_model(model);
    const Recipe recipe = parse_recipe(recipe_json, source);
    {
        // The KV cache and the rotation's block sizes are checked against the model too (a KV
        // cache on an encoder, an exclude glob matching no attention, an rht block that does not
        // divide a layer); nothing is changed.
        const QuantizedModel check(*m.model, recipe);
        online_rotations(check);
    }
    std::vector<LayerSummary> out;
    for (const LayerQuantPlan& p : plan_recipe(recipe, *m.model)) {
        LayerSummary ls = layer_summary(*p.layer);
        describe_quantizers(ls, p.weight, p.input, p.weight_spec, weight_matrix_shape(*p.layer));
        out.push_back(std::move(ls));
    }
    return out;
}

ModelSummary inspect_model(const std::string& model) {
    OpenedModel m = open_model(model);
    ModelSummary s;
    s.path = m.path;
    s.is_demo = m.is_demo;
    s.config = m.model->config();
    s.parameter_count = m.model->parameter_count();
    for (const auto& [name, t] : m.model->named_parameters()) {
        ParameterSummary p;
        p.name = name;
        p.shape.assign(t.sizes().begin(), t.sizes().end());
        p.dtype = dtype_text(t);
        p.numel = t.numel();
        s.parameter_bytes += t.numel() * static_cast<int64_t>(t.element_size());
        s.parameters.push_back(std::move(p));
    }
    std::vector<LayerSummary> planned;
    if (m.quantization) {
        for (const LayerQuantPlan& p : plan_recipe(m.quantization->recipe(), *m.model)) {
            LayerSummary ls = layer_summary(*p.layer);
            describe_quantizers(ls, p.weight, p.input, p.weight_spec, weight_matrix_shape(*p.layer));
            planned.push_back(std::move(ls));
        }
    }
    for (const QuantizableLayer* l : m.model->quantizable_layers()) {
        LayerSummary ls = layer_summary(*l);
        for (const LayerSummary& p : planned)
            if (p.name == ls.name) ls = p;
        s.layers.push_back(std::move(ls));
    }
    return s;
}

}  // namespace ql
