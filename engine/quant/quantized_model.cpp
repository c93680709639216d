// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantized_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/quant/fused_layers.h"
#include "engine/core/errors.h"
#include "engine/quant/quant_plan.h"

namespace ql {

double weight_storage_bits(const QuantSpec& spec, const std::vector<int64_t>& shape) {
    const double rows = static_cast<double>(shape[0]), cols = static_cast<double>(shape[1]);
    const double n = rows * cols;
    const FormatInfo& f = *spec.info;
    const double eb = f.element_bits;
    if (f.family == "passthrough") return n * eb;
    if (f.family == "nvfp4") return n * eb + (n / 16.0) * 8 + 32;
    if (f.family == "nvfp4_e5m3") return n * eb + (n / 16.0) * 8;
    if (f.family == "llm_int8") return n * eb + rows * 32;
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
    const KvCacheSettings& kv = recipe_.kv_cache;
    const bool rotate_qk = recipe_.rotation.enabled() && recipe_.rotation.qk;
    if ((kv.enabled || rotate_qk) && model_.attention_sites().empty())
        throw UserError(recipe_.source + ": " + (kv.enabled ? std::string("kv_cache") : std::string("rotation.qk")) + ": " +
                        (model_.config().name.empty() ? model_.config().model_type : model_.config().name) +
                        " keeps no KV cache (an encoder, or a model without attention)");
    std::vector<bool> exclude_used(kv.exclude.size(), false);
    for (AttentionSite* site : model_.attention_sites()) {
        KvCacheSettings own = kv;
        for (size_t i = 0; i < kv.exclude.size(); ++i)
            if (glob_match(kv.exclude[i], site->name)) {
                own.enabled = false;
                exclude_used[i] = true;
            }
        if (!own.enabled && !rotate_qk && !(kv.enabled && kv.rotate)) continue;
        kv_.push_back(std::make_unique<KvCacheQuantizer>(*site, own, rotate_qk || (kv.enabled && kv.rotate)));
    }
    for (size_t i = 0; i < kv.exclude.size(); ++i)
        if (!exclude_used[i])
            throw UserError(recipe_.source + ": kv_cache.exclude[" + std::to_string(i) + "] '" + kv.exclude[i] +
                            "' matches no attention of the model (they are named like '" +
                            (model_.attention_sites().empty() ? std::string("model.layers.0.self_attn") : model_.attention_sites().front()->name) + "')");
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

QuantizedModel::~QuantizedModel() = default;

KvCacheQuantizer* QuantizedModel::find_kv_cache(const std::string& attention_name) const {
    for (const auto& k : kv_)
        if (k->name() == attention_name) return k.get();
    return nullptr;
}

void QuantizedModel::set_kv_cache_enabled(bool on) {
    for (const auto& k : kv_) k->set_enabled(on);
}

KvCacheMemory QuantizedModel::kv_cache_memory() const {
    KvCacheMemory m;
    for (const AttentionSite* site : model_.attention_sites()) {
        const double elements = 2.0 * static_cast<double>(site->num_kv_heads * site->head_dim);  // K and V
        const KvCacheQuantizer* k = find_kv_cache(site->name);
        const double bits = k && k->configured() ? k->settings().bits_per_element(site->head_dim) : 16.0;
        m.bits_per_token += elements * bits;
        m.fp16_bits_per_token += elements * 16.0;
        ++m.layers;
        m.kv_heads = site->num_kv_heads;
        m.head_dim = site->head_dim;
    }
    return m;
}

LayerQuantizer* QuantizedModel::find(const std::string& layer_name) const {
    for (const auto& l : layers_)
        if (l->name() == layer_name) return l.get();
    return nullptr;
}

void QuantizedModel::set_enabled(bool on) {
    for (const auto& l : layers_) l->set_enabled(on);
    set_kv_cache_enabled(on);
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

namespace ql {

std::optional<KvCacheScales> QuantizedModel::kv_cache_scales() const {
    // What the exports can write as one k_scale / v_scale per attention (kv_cache_scales.h).
    const KvCacheSettings& s = recipe().kv_cache;
    if (!s.enabled || (s.format != "fp8_e4m3" && s.format != "nvfp4") || s.granularity != "tensor") return std::nullopt;
    KvCacheScales out;
    out.format = s.format;
    for (const auto& kv : kv_) {
        if (!kv->configured() || kv->key_amax().size() != 1 || kv->value_amax().size() != 1) continue;
        out.layers.push_back({kv->name(), kv->name() + ".k_proj", kv->name() + ".v_proj", kv->key_amax()[0], kv->value_amax()[0]});
    }
    if (out.layers.empty()) return std::nullopt;
    return out;
}

}  // namespace ql
