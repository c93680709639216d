// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/base_fingerprint.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/sha256.h"

namespace ql {
namespace {

void fingerprint_tensor(Sha256& h, const at::Tensor& t) {
    const at::Tensor c = t.detach().to(at::kCPU).contiguous();
    h.update(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
}

template <class T>
void fingerprint_values(Sha256& h, const std::vector<T>& v) {
    if (!v.empty()) h.update(v.data(), v.size() * sizeof(T));
}

}  // namespace

std::string BaseFingerprint::summary() const {
    std::map<std::string, int64_t> counts;
    for (const BaseLayerFingerprint& l : layers) {
        std::string d = l.format;
        if (l.format != "fp32") {
            d += " (";
            d += l.block > 0 ? "block " + std::to_string(l.block) : std::string("per tensor/channel");
            if (l.double_quant) d += ", double quant";
            if (l.asymmetric) d += ", asymmetric";
            d += ")";
        }
        ++counts[d];
    }
    std::string out;
    for (const auto& [d, n] : counts) {
        if (!out.empty()) out += "; ";
        out += d + " on " + std::to_string(n) + " of " + std::to_string(layers.size()) + " linear layers";
    }
    return out;
}

BaseFingerprint fingerprint_base(const QuantizedModel& base) {
    c10::NoGradGuard no_grad;
    BaseFingerprint f;
    Sha256 all;
    std::set<const void*> in_layers;
    for (const LinearLayer* layer : base.model().linear_layers()) {
        BaseLayerFingerprint l;
        l.module = layer->name;
        Sha256 h;
        const LayerQuantizer* q = base.find(layer->name);
        if (q && q->weight_enabled()) {
            const QuantSpec spec = q->weight_spec();
            l.format = spec.info->name;
            l.block = spec.block;
            l.double_quant = spec.double_quant;
            l.asymmetric = spec.asymmetric;
            const EncodedTensor e = q->encode_weight();
            fingerprint_values(h, e.codes.bytes);
            fingerprint_values(h, e.scales.bytes);
            fingerprint_values(h, e.raw_scales);
            fingerprint_values(h, e.absmax2);
            fingerprint_values(h, e.zero_points);
            fingerprint_values(h, e.gguf_blocks);
            if (e.global_scale) h.update(&*e.global_scale, sizeof(float));
            if (e.offset) h.update(&*e.offset, sizeof(float));
        } else {
            fingerprint_tensor(h, layer->weight);
        }
        if (q && q->pre_quant_scale().defined()) fingerprint_tensor(h, q->pre_quant_scale());
        if (q && q->input_enabled()) {
            const float amax = q->input_amax();
            h.update(&amax, sizeof amax);
        }
        if (layer->bias.defined()) fingerprint_tensor(h, layer->bias);
        l.sha256 = h.hex();
        all.update(l.module.data(), l.module.size());
        all.update(l.sha256.data(), l.sha256.size());
        in_layers.insert(layer->weight.data_ptr());
        if (layer->bias.defined()) in_layers.insert(layer->bias.data_ptr());
        f.layers.push_back(std::move(l));
    }
    Sha256 other;
    for (const auto& [name, p] : base.model().named_parameters()) {
        if (in_layers.count(p.data_ptr())) continue;
        other.update(name.data(), name.size());
        fingerprint_tensor(other, p);
    }
    f.other_sha256 = other.hex();
    all.update(f.other_sha256.data(), f.other_sha256.size());
    f.sha256 = all.hex();
    return f;
}

nlohmann::json fingerprint_json(const BaseFingerprint& f) {
    nlohmann::json layers = nlohmann::json::array();
    for (const BaseLayerFingerprint& l : f.layers)
        layers.push_back({{"module", l.module}, {"format", l.format}, {"block", l.block}, {"double_quant", l.double_quant},
                          {"asymmetric", l.asymmetric}, {"sha256", l.sha256}});
    return {{"sha256", f.sha256}, {"summary", f.summary()}, {"other_sha256", f.other_sha256}, {"layers", layers}};
}

BaseFingerprint fingerprint_from_json(const nlohmann::json& j, const std::string& source) {
    BaseFingerprint f;
    try {
        f.sha256 = j.at("sha256").get<std::string>();
        f.other_sha256 = j.at("other_sha256").get<std::string>();
        for (const auto& l : j.at("layers")) {
            BaseLayerFingerprint b;
            b.module = l.at("module").get<std::string>();
            b.format = l.at("format").get<std::string>();
            b.block = l.at("block").get<int64_t>();
            b.double_quant = l.at("double_quant").get<bool>();
            b.asymmetric = l.at("asymmetric").get<bool>();
            b.sha256 = l.at("sha256").get<std::string>();
            f.layers.push_back(std::move(b));
        }
    } catch (const nlohmann::json::exception& e) {
        throw UserError(source + ": base_fingerprint: " + e.what());
    }
    return f;
}

std::vector<FingerprintDifference> compare_fingerprints(const BaseFingerprint& a, const BaseFingerprint& b) {
    std::vector<FingerprintDifference> out;
    std::map<std::string, const BaseLayerFingerprint*> given;
    for (const BaseLayerFingerprint& l : b.layers) given[l.module] = &l;
    for (const BaseLayerFingerprint& l : a.layers) {
        const auto it = given.find(l.module);
        if (it == given.end()) {
            out.push_back({l.module, "missing in the given base"});
            continue;
        }
        const BaseLayerFingerprint& g = *it->second;
        std::string what;
        const auto add = [&what](const std::string& s) { what += (what.empty() ? "" : ", ") + s; };
        if (l.format != g.format) add("format " + l.format + " -> " + g.format);
        if (l.block != g.block) add("block " + std::to_string(l.block) + " -> " + std::to_string(g.block));
        if (l.double_quant != g.double_quant) add(std::string("double quant ") + (l.double_quant ? "on -> off" : "off -> on"));
        if (l.asymmetric != g.asymmetric) add(std::string("asymmetric ") + (l.asymmetric ? "on -> off" : "off -> on"));
        if (what.empty() && l.sha256 != g.sha256) add("codes / scales");
        if (!what.empty()) out.push_back({l.module, what});
        given.erase(it);
    }
    for (const auto& [module, l] : given) out.push_back({module, "not in the base the adapter was trained on"});
    if (a.other_sha256 != b.other_sha256) out.push_back({"(embeddings, norms)", "other parameters differ"});
    return out;
}

}  // namespace ql
