// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantized_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/quant/fused_layers.h"
#include "engine/quant/quant_plan.h"

namespace ql {

double weight_storage_bits(const QuantSpec& spec, const std::vector<int64_t>& shape) {
    const double rows = static_cast<double>(shape[0]), cols = static_cast<double>(shape[1]);
    const double n = rows * cols;
    const FormatInfo& f = *spec.info;
    const double eb = f.element_bits;
    if (f.family == "passthrough") return n * eb;
    if (f.family == "nvfp4") return n * eb + (n / 16.0) * 8 + 32;
    if (f.family == "mx") return n * eb + (n / 32.0) * 8;
    if (f.family == "gguf") return n * f.bits_per_element;
    if (f.family == "nf4") {
        const double blocks = n / static_cast<double>(spec.block);
        if (spec.double_quant) return n * eb + blocks * 8 + (blocks / 256.0) * 32 + 32;
        return n * eb + blocks * 32;
    }
    double scales = 1;
    if (spec.granularity == Granularity::Channel) scales = shape[spec.axis];
    if (spec.granularity == Granularity::Group) scales = n / static_cast<double>(spec.block);
    return n * eb + scales * (32 + (spec.asymmetric ? eb : 0));
}

QuantizedModel::QuantizedModel(Model& model, Recipe recipe) : model_(model), recipe_(std::move(recipe)) {
    std::vector<LayerQuantPlan> plans = plan_recipe(recipe_, model_);
    for (LayerQuantPlan& p : plans) layers_.push_back(std::make_unique<LayerQuantizer>(std::move(p)));
    if (!recipe_.share_fused_scales) return;
    for (const std::vector<std::string>& group : fused_layer_groups(model_)) {
        // Members by weight format: only shards of one format can share a scale.
        std::map<std::string, std::vector<LayerQuantizer*>> by_format;
        for (const std::string& name : group) {
            LayerQuantizer* l = find(name);
            if (!l || !l->weight_configured()) continue;
            const QuantSpec& s = l->plan().weight_spec;
            const std::string& fam = s.info->family;
            const bool per_tensor = fam == "nvfp4" || ((fam == "fp8" || (fam == "int" && !s.asymmetric)) &&
                                                       s.granularity == Granularity::Tensor);
            if (per_tensor) by_format[s.info->name].push_back(l);
        }
        for (auto& [format, members] : by_format) {
            if (members.size() < 2) continue;
            std::vector<const QuantizableLayer*> layers;
            std::vector<std::string> names;
            for (LayerQuantizer* l : members) {
                layers.push_back(&l->layer());
                names.push_back(l->name());
            }
            auto shared = std::make_shared<const SharedWeightAmax>(std::move(layers));
            for (LayerQuantizer* l : members) l->set_shared_weight_amax(shared);
            shared_weight_groups_.push_back(std::move(names));
        }
    }
}

void QuantizedModel::share_fused_input_amax() {
    if (!recipe_.share_fused_scales) return;
    for (const std::vector<std::string>& group : fused_layer_groups(model_)) {
        std::map<std::string, std::vector<LayerQuantizer*>> by_format;
        for (const std::string& name : group) {
            LayerQuantizer* l = find(name);
            if (l && l->input_needs_amax() && !std::isnan(l->input_amax())) by_format[l->plan().input_spec.info->name].push_back(l);
        }
        for (auto& [format, members] : by_format) {
            float amax = 0;
            for (LayerQuantizer* l : members) amax = std::max(amax, l->input_amax());
            for (LayerQuantizer* l : members) l->set_input_amax(amax);
        }
    }
}

LayerQuantizer* QuantizedModel::find(const std::string& layer_name) const {
    for (const auto& l : layers_)
        if (l->name() == layer_name) return l.get();
    return nullptr;
}

void QuantizedModel::set_enabled(bool on) {
    for (const auto& l : layers_) l->set_enabled(on);
}

ModelSize QuantizedModel::size() const {
    ModelSize s;
    s.parameters = model_.parameter_count();
    int64_t quantized = 0;
    for (const auto& l : layers_) {
        if (!l->weight_enabled()) continue;
        const std::vector<int64_t> shape = weight_matrix_shape(l->layer());
        const int64_t n = shape[0] * shape[1];
        quantized += n;
        s.quantized_bits += weight_storage_bits(l->weight_spec(), shape);
    }
    s.quantized_parameters = quantized;
    s.bits = s.quantized_bits + 16.0 * static_cast<double>(s.parameters - quantized);
    return s;
}

}  // namespace ql
