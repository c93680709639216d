// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/kv_cache_scales.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/models/model.h"

namespace ql {

using nlohmann::json;

float kv_scale_of(float amax) { return amax / 448.0f; }

float kv_amax_for_scale(float scale, const std::string& where) {
    if (!std::isfinite(scale) || scale < 0) throw UserError(where + ": a KV-cache scale must be finite and >= 0");
    // Division by 448 is monotonic: the nearest float to scale * 448 or a neighbour maps back.
    float up = scale * 448.0f, down = up;
    for (int i = 0; i < 64; ++i) {
        if (kv_scale_of(up) == scale) return up;
        if (kv_scale_of(down) == scale) return down;
        up = std::nextafter(up, INFINITY);
        down = std::nextafter(down, 0.0f);
    }
    throw UserError(where + ": no K/V amax gives the scale " + std::to_string(scale));
}

std::string modelopt_kv_cache_algo(const std::string& format) { return format == "nvfp4" ? "NVFP4" : "FP8"; }

std::vector<KvLayerScales> kv_cache_layers(const Model& model) {
    const std::string& arch = model.config().architecture;
    if (arch != "llama" && arch != "qwen2")
        throw UserError("KV-cache scales: a " + arch + " model " +
                        (arch == "gpt2" ? std::string("computes K and V in one fused c_attn projection, which QuantLab does not "
                                                      "calibrate per K/V yet")
                                        : std::string("has no KV cache")) +
                        " (supported: Llama, Mistral, Qwen2 decoders and the demo)");
    std::vector<KvLayerScales> out;
    for (const LinearLayer* l : model.linear_layers()) {
        const std::string& n = l->name;
        const std::string suffix = ".k_proj";
        if (n.size() <= suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
        KvLayerScales s;
        s.attention = n.substr(0, n.size() - suffix.size());
        s.k_proj = n;
        s.v_proj = s.attention + ".v_proj";
        if (!model.find_layer(s.v_proj)) throw UserError("KV-cache scales: " + s.attention + " has k_proj but no v_proj");
        out.push_back(s);
    }
    return out;
}

std::string kv_cache_scales_json(const KvCacheScales& s) {
    json layers = json::array();
    for (const KvLayerScales& l : s.layers)
        layers.push_back({{"attention", l.attention}, {"k_proj", l.k_proj}, {"v_proj", l.v_proj}, {"k_amax", l.k_amax}, {"v_amax", l.v_amax}});
    return json({{"format", s.format}, {"layers", layers}}).dump(2) + "\n";
}

KvCacheScales parse_kv_cache_scales(const std::string& text, const std::string& where) {
    json j;
    try {
        j = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(where + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("format") || !j["format"].is_string())
        throw UserError(where + ": format: expected \"fp8_e4m3\" or \"nvfp4\"");
    KvCacheScales s;
    s.format = j["format"].get<std::string>();
    if (s.format != "fp8_e4m3" && s.format != "nvfp4") throw UserError(where + ": format: expected \"fp8_e4m3\" or \"nvfp4\"");
    if (!j.contains("layers") || !j["layers"].is_array()) throw UserError(where + ": layers: expected a list");
    for (size_t i = 0; i < j["layers"].size(); ++i) {
        const json& l = j["layers"][i];
        const std::string f = where + ": layers[" + std::to_string(i) + "]";
        KvLayerScales k;
        for (const char* key : {"attention", "k_proj", "v_proj"})
            if (!l.is_object() || !l.contains(key) || !l[key].is_string()) throw UserError(f + "." + key + ": expected a string");
        for (const char* key : {"k_amax", "v_amax"})
            if (!l.contains(key) || !l[key].is_number() || !(l[key].get<double>() >= 0) || !std::isfinite(l[key].get<double>()))
                throw UserError(f + "." + key + ": expected a finite number >= 0");
        k.attention = l["attention"].get<std::string>();
        k.k_proj = l["k_proj"].get<std::string>();
        k.v_proj = l["v_proj"].get<std::string>();
        k.k_amax = l["k_amax"].get<float>();
        k.v_amax = l["v_amax"].get<float>();
        s.layers.push_back(k);
    }
    return s;
}

}  // namespace ql
