// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/kv_cache_export.h"

#include <cmath>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/safetensors_tensors.h"

namespace ql {
namespace {

ExportTensor float_tensor(const std::string& name, const std::vector<float>& v, bool scalar) {
    ExportTensor t;
    t.name = name;
    t.dtype = SafetensorsDtype::F32;
    if (!scalar) t.shape = {static_cast<int64_t>(v.size())};
    t.bytes.resize(v.size() * sizeof(float));
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
}

// The amax whose scale (amax / divisor in float32) is `scale`: the nearest float to
// scale * divisor nearly always maps back, else one of its neighbours (division is monotonic).
float amax_for_kv_scale(float scale, float divisor, const std::string& where) {
    if (!std::isfinite(scale) || scale < 0) throw UserError(where + ": must be finite and >= 0, got " + std::to_string(scale));
    float up = scale * divisor, down = up;
    for (int i = 0; i < 64; ++i) {
        if (up / divisor == scale) return up;
        if (down / divisor == scale) return down;
        up = std::nextafter(up, INFINITY);
        down = std::nextafter(down, 0.0f);
    }
    throw UserError(where + ": no amax gives the scale " + std::to_string(scale));
}

}  // namespace

KvCacheImport read_hf_modelopt_kv_cache(const SafetensorsCheckpoint& checkpoint, const std::string& algo, const Model& model,
                                        const std::string& where) {
    KvCacheImport out;
    if (algo.empty()) return out;
    KvCacheSettings& s = out.settings;
    s.enabled = true;
    if (algo == "FP8")
        s.format = "fp8_e4m3";
    else if (algo == "NVFP4")
        s.format = "nvfp4";
    else if (algo == "INT8")
        s.format = "int8";
    else
        throw UserError(where + ": quantization.kv_cache_quant_algo: '" + algo + "' is not supported (FP8, NVFP4, INT8 are)");
    const float divisor = algo == "INT8" ? 127.0f : 448.0f;
    bool per_head = false, first = true;
    for (const AttentionSite* site : model.attention_sites()) {
        const std::string k = site->name + ".k_proj.k_scale", v = site->name + ".v_proj.v_scale";
        if (!checkpoint.contains(k) && !checkpoint.contains(v)) {
            s.exclude.push_back(site->name);
            continue;
        }
        std::vector<float> amax[2];
        for (int i = 0; i < 2; ++i) {
            const std::string& name = i == 0 ? k : v;
            if (!checkpoint.contains(name)) throw UserError(checkpoint.path() + ": missing tensor '" + name + "'");
            const at::Tensor t = load_float32(checkpoint, name).reshape({-1}).contiguous();
            if (checkpoint.info(name).dtype != SafetensorsDtype::F32 || (t.numel() != 1 && t.numel() != site->num_kv_heads))
                throw UserError(checkpoint.path() + ": tensor '" + name + "': expected F32 [] or [" +
                                std::to_string(site->num_kv_heads) + "] (one per KV head)");
            const bool heads = t.numel() > 1 || checkpoint.info(name).shape.size() == 1;
            if (!first && heads != per_head)
                throw UserError(checkpoint.path() + ": tensor '" + name + "': per-tensor and per-head KV scales are mixed");
            per_head = heads;
            first = false;
            for (int64_t h = 0; h < t.numel(); ++h)
                amax[i].push_back(amax_for_kv_scale(t.data_ptr<float>()[h], divisor, checkpoint.path() + ": " + name));
            out.tensors.insert(name);
        }
        out.amax[site->name] = {amax[0], amax[1]};
    }
    if (per_head) s.granularity = "head";
    if (out.amax.empty()) throw UserError(where + ": kv_cache_quant_algo is " + algo + " but no attention has a k_scale / v_scale");
    return out;
}

KvCacheExport hf_modelopt_kv_cache(const QuantizedModel& q) {
    KvCacheExport out;
    int64_t skipped = 0;
    for (const auto& kp : q.kv_caches()) {
        const KvCacheQuantizer& kv = *kp;
        if (!kv.configured()) continue;
        if (!kv.enabled()) {
            ++skipped;
            continue;
        }
        const KvCacheSettings& s = kv.settings();
        const std::string family = format_info(s.format).family;
        std::string algo;
        if (s.format == "fp8_e4m3")
            algo = "FP8";
        else if (family == "nvfp4")
            algo = "NVFP4";
        else if (s.format == "int8" && s.granularity != "group")
            algo = "INT8";
        else
            throw UserError("hf-modelopt export: " + kv.name() + ": a " + s.describe() +
                            " KV cache has no Model Optimizer layout (FP8 E4M3, NVFP4 and INT8 with static scales have)");
        if (!out.quant_algo.empty() && out.quant_algo != algo)
            throw UserError("hf-modelopt export: the KV caches mix " + out.quant_algo + " and " + algo +
                            "; Model Optimizer's layout has one kv_cache_quant_algo");
        out.quant_algo = algo;
        if (q.model().config().architecture == "gpt2")
            throw UserError("hf-modelopt export: " + kv.name() +
                            ": GPT-2's fused c_attn has no k_proj / v_proj to carry k_scale and v_scale");
        const std::vector<float> ks = kv.key_scale(), vs = kv.value_scale();
        if (ks.empty() || vs.empty())
            throw UserError("hf-modelopt export: " + kv.name() + ": the KV-cache scales are not calibrated");
        const bool scalar = ks.size() == 1;
        out.tensors.push_back(float_tensor(kv.name() + ".k_proj.k_scale", ks, scalar));
        out.tensors.push_back(float_tensor(kv.name() + ".v_proj.v_scale", vs, scalar));
    }
    if (skipped > 0)
        out.warnings.push_back(std::to_string(skipped) +
                               " KV-cache quantizers are switched off; their layers get no k_scale / v_scale");
    return out;
}

}  // namespace ql
