// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor's checks of a Model Optimizer unified HF checkpoint (hf-modelopt), as vLLM
// (quantization=modelopt, vllm/model_executor/layers/quantization/modelopt.py) and TensorRT-LLM
// read it: hf_quant_config.json vs config.json's quantization_config, exclude_modules vs the
// tensors present, dtypes and shapes per quant_algo (export_validator.h), one weight_scale_2 /
// input_scale per fused layer group, divisor (not multiplier) scales, the weights decoded back vs
// QuantLab's digests, and kv_cache_quant_algo vs the k_proj.k_scale / v_proj.v_scale tensors.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "engine/core/errors.h"
#include "engine/export/doctor_context.h"
#include "engine/export/export_validator.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/quant/fused_layers.h"

namespace ql {
namespace {

using nlohmann::json;
constexpr const char* kConsumer = "vLLM / TensorRT-LLM";

float first_f32(const ExportTensor& t) {
    float v = 0;
    if (t.bytes.size() >= 4) std::memcpy(&v, t.bytes.data(), 4);
    return v;
}

std::string number_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

int64_t group_of(const json& j) {
    return j.contains("group_size") && j["group_size"].is_number_integer() ? j["group_size"].get<int64_t>() : 0;
}

}  // namespace

void check_modelopt_folder(const HfFolderView& f, DoctorContext& ctx) {
    ctx.check("config-schema", "hf_quant_config.json is readable and config.json's quantization_config names the same algorithm");
    ctx.check("coverage", "every quantized module has its tensors; excluded modules hold none");
    ctx.check("dtypes-shapes", "dtypes and shapes of every quantized module's tensors per quant_algo");
    ctx.check("fused-scales", "layers vLLM fuses (q/k/v, gate/up) share one weight_scale_2 / input_scale");
    ctx.check("scale-conventions", "scales are divisors (Model Optimizer), not compressed-tensors' multipliers");
    ctx.check("reproduces-quantlab", "the packed weights decode to exactly the weights QuantLab evaluated (quantlab_export.json)");
    ctx.check("kv-cache", "kv_cache_quant_algo and the k_proj.k_scale / v_proj.v_scale tensors agree");
    const std::string qc_path = f.path + "/hf_quant_config.json";
    json hq;
    try {
        const std::string text = read_whole_file(f.disk_path + "/hf_quant_config.json", "hf_quant_config.json");
        hq = parse_strict_json(text.data(), text.data() + text.size());
        if (!hq.is_object() || !hq.contains("quantization") || !hq["quantization"].is_object())
            throw UserError("quantization: expected an object");
    } catch (const std::exception& e) {
        ctx.error("config-schema", qc_path, std::string("unreadable: ") + e.what(), std::string(kConsumer) + " fails to load",
                  "write hf_quant_config.json as Model Optimizer does");
        for (const char* c : {"config-schema", "coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab", "kv-cache"})
            ctx.skipped(c, "no readable hf_quant_config.json");
        return;
    }
    const json& q = hq["quantization"];
    const std::string algo = q.contains("quant_algo") && q["quant_algo"].is_string() ? q["quant_algo"].get<std::string>() : "";
    // config.json's mirror (modelopt convert_hf_config.py).
    if (f.config.is_object()) {
        if (!f.config.contains("quantization_config") || !f.config["quantization_config"].is_object()) {
            ctx.warning("config-schema", "config.json quantization_config", "missing",
                        "vLLM detects the format from config.json: it may load the model as unquantized and fail on the packed weights",
                        "add quantization_config with quant_method \"modelopt\"");
        } else {
            const json& c = f.config["quantization_config"];
            const std::string method = c.contains("quant_method") && c["quant_method"].is_string() ? c["quant_method"].get<std::string>() : "";
            const std::string calgo = c.contains("quant_algo") && c["quant_algo"].is_string() ? c["quant_algo"].get<std::string>() : "";
            if (method != "modelopt")
                ctx.error("config-schema", "config.json quantization_config.quant_method",
                          "is '" + method + "' while hf_quant_config.json is Model Optimizer's",
                          "vLLM picks the quantization method from config.json: it reads the tensors with another method's layout",
                          "set quant_method \"modelopt\"");
            if (!calgo.empty() && calgo != algo)
                ctx.error("config-schema", "config.json quantization_config.quant_algo",
                          "names " + calgo + ", hf_quant_config.json names " + algo,
                          "vLLM and TensorRT-LLM read different files: one of them loads the tensors as the wrong algorithm",
                          "make both name the algorithm the tensors hold");
        }
    }
    std::vector<std::string> excluded;
    if (q.contains("exclude_modules") && q["exclude_modules"].is_array())
        for (const json& e : q["exclude_modules"])
            if (e.is_string()) excluded.push_back(e.get<std::string>());
    std::map<std::string, HfLayerFormat> mixed;
    std::optional<HfLayerFormat> single;
    try {
        if (algo == "MIXED_PRECISION") {
            if (!q.contains("quantized_layers") || !q["quantized_layers"].is_object())
                throw UserError("quantization.quantized_layers: expected an object for MIXED_PRECISION");
            for (auto it = q["quantized_layers"].begin(); it != q["quantized_layers"].end(); ++it) {
                const std::string a = it->contains("quant_algo") && (*it)["quant_algo"].is_string() ? (*it)["quant_algo"].get<std::string>() : "";
                mixed[it.key()] = hf_format_named(a, group_of(*it), qc_path + ": quantized_layers." + it.key());
            }
        } else {
            single = hf_format_named(algo, group_of(q), qc_path);
        }
    } catch (const UserError& e) {
        ctx.warning("config-schema", qc_path, std::string("not checked further: ") + e.what(), "", "");
        ctx.ran("config-schema");
        for (const char* c : {"coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab", "kv-cache"})
            ctx.skipped(c, "quant_algo not read by QuantLab");
        return;
    }
    ctx.ran("config-schema", algo);
    if (!f.checkpoint) {
        for (const char* c : {"coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab", "kv-cache"})
            ctx.skipped(c, "the checkpoint does not open");
        return;
    }

    auto is_excluded = [&](const std::string& m) {
        for (const std::string& e : excluded)
            if (ct_name_matches(e, m)) return true;
        return false;
    };
    std::vector<HfExportLayer> layers;
    for (const std::string& m : f.matrix_modules()) {
        const std::set<std::string>& params = f.modules.at(m);
        bool has_q = false;
        std::string first;
        for (const std::string& p : params)
            if (is_quantization_param(p) && p != "k_scale" && p != "v_scale" && p != "k_bias" && p != "v_bias") {
                has_q = true;
                if (first.empty()) first = p;
            }
        const HfLayerFormat* fmt = nullptr;
        if (single && !is_excluded(m) && !is_embedding_name(m)) fmt = &*single;
        if (!single) {
            const auto it = mixed.find(m);
            if (it != mixed.end()) fmt = &it->second;
        }
        if (!fmt) {
            if (has_q)
                ctx.error("coverage", m,
                          std::string(is_excluded(m) ? "is in exclude_modules" : "is not a quantized layer") + " but holds " + m + "." + first,
                          std::string(kConsumer) + " loads it in high precision and fails on the unexpected scale tensor",
                          "remove the scale tensors, or remove the module from exclude_modules");
            continue;
        }
        // [out, in] from the weight: U8 packs two values per byte (NVFP4/MXFP4 along in, INT4 along out).
        if (!params.count("weight")) continue;
        const auto& shape = f.checkpoint->info(m + ".weight").shape;
        if (shape.size() != 2) continue;
        int64_t out = shape[0], in = shape[1];
        const SafetensorsDtype wd = f.checkpoint->info(m + ".weight").dtype;
        if (wd == SafetensorsDtype::U8) {
            if (fmt->quant_algo == "W4A16_AWQ") out *= 2;
            else in *= 2;
        }
        layers.push_back({m, *fmt, out, in});
    }
    std::vector<ExportTensor> stored;
    for (const HfExportLayer& l : layers) {
        for (const ExpectedTensor& e : hf_expected_tensors(l.layer, l.format, l.out, l.in))
            if (f.has(e.name)) stored.push_back(f.tensor(e.name));
        if (f.has(l.layer + ".pre_quant_scale") && l.format.quant_algo == "W4A16_AWQ") stored.push_back(f.tensor(l.layer + ".pre_quant_scale"));
    }
    std::map<std::string, const ExportTensor*> by_name;
    for (const ExportTensor& t : stored) by_name[t.name] = &t;
    std::set<std::string> bad;
    for (const std::string& p : find_hf_export_problems(layers, by_name)) {
        const std::string name = p.substr(0, p.find(':'));
        bad.insert(name.substr(0, name.rfind('.')));
        const bool missing = p.find(": missing") != std::string::npos;
        ctx.error(missing ? "coverage" : "dtypes-shapes", name, p.substr(p.find(':') + 2),
                  missing ? std::string(kConsumer) + " fails to load (missing scale)" : std::string(kConsumer) + " fails to load or misreads the bytes",
                  "export again");
    }
    ctx.report().layers += static_cast<int64_t>(layers.size());
    ctx.ran("coverage", std::to_string(layers.size()) + " quantized module(s)");
    ctx.ran("dtypes-shapes", std::to_string(layers.size() - bad.size()) + " module(s) complete");

    auto tensors_of = [&](const HfExportLayer& l) {
        std::vector<ExportTensor> mine;
        for (const ExportTensor& t : stored)
            if (t.name.compare(0, l.layer.size() + 1, l.layer + ".") == 0) mine.push_back(t);
        return mine;
    };
    // Conventions: divisors decode to plausible weights; compressed-tensors' multipliers to ~ 2688^2 / amax.
    std::map<std::string, std::vector<float>> decoded;
    for (const HfExportLayer& l : layers) {
        if (bad.count(l.layer)) continue;
        const std::vector<float> w = dequantize_hf_layer(l.layer, l.format, l.out, l.in, tensors_of(l));
        const float amax = finite_amax(w);
        if (amax > 1e4f)
            ctx.error("scale-conventions", l.layer + (l.format.quant_algo.find("NVFP4") != std::string::npos ? ".weight_scale_2" : ".weight_scale"),
                      "the weights decode to |w| up to " + number_text(amax) +
                          ": the scale looks inverted (compressed-tensors' multiplier 2688 / amax where Model Optimizer divides)",
                      std::string(kConsumer) + " loads the layer with wrong numbers", "store weight_scale_2 = amax / (6 * 448)");
        if (by_name.count(l.layer + ".input_scale")) {
            const float s = first_f32(*by_name.at(l.layer + ".input_scale"));
            const float divisor = l.format.quant_algo == "FP8" ? 448.0f : 2688.0f;
            if (!(s > 0) || !std::isfinite(s))
                ctx.error("scale-conventions", l.layer + ".input_scale", "is " + number_text(s) + " (must be finite and > 0)",
                          std::string(kConsumer) + " computes NaN / Inf activations", "export the calibrated scale");
            else if (s * divisor > 1e5f)
                ctx.warning("scale-conventions", l.layer + ".input_scale", "is " + number_text(s) + ", an input amax of " + number_text(s * divisor) +
                                ": it looks like compressed-tensors' multiplier input_global_scale",
                            std::string(kConsumer) + " quantizes activations with a wrong scale", "store input_scale = amax / " + number_text(divisor));
        }
        decoded[l.layer] = w;
    }
    ctx.ran("scale-conventions", std::to_string(decoded.size()) + " module(s)");

    // Fused groups.
    std::vector<std::string> names;
    for (const HfExportLayer& l : layers) names.push_back(l.layer);
    int64_t fused = 0;
    for (const std::vector<std::string>& g : fused_layer_groups(names)) {
        ++fused;
        const std::string members = g.front() + " .. " + g.back().substr(g.back().rfind('.') + 1);
        std::set<std::string> algos;
        for (const HfExportLayer& l : layers)
            if (std::find(g.begin(), g.end(), l.layer) != g.end()) algos.insert(l.format.quant_algo);
        if (algos.size() > 1) {
            ctx.error("fused-scales", members, "the fused shards have different quant_algo", std::string(kConsumer) + " refuses to load",
                      "quantize the fused layers alike");
            continue;
        }
        auto compare = [&](const std::string& param, bool error, const std::string& consumer) {
            std::vector<float> v;
            for (const std::string& n : g) {
                const auto it = by_name.find(n + "." + param);
                if (it == by_name.end() || it->second->bytes.size() != 4) return;
                v.push_back(first_f32(*it->second));
            }
            std::string values;
            bool equal = true;
            for (size_t i = 0; i < v.size(); ++i) {
                equal = equal && v[i] == v.front();
                values += (i ? ", " : "") + number_text(v[i]);
            }
            if (equal) return;
            const std::string fix = "quantize with \"share_fused_scales\": true (the NVFP4 and FP8 presets do) and export again";
            if (error) ctx.error("fused-scales", members, "the fused shards' " + param + " differ (" + values + ")", consumer, fix);
            else ctx.warning("fused-scales", members, "the fused shards' " + param + " differ (" + values + ")", consumer, fix);
        };
        const std::string& a = *algos.begin();
        if (a == "NVFP4" || a == "NVFP4_AWQ" || a == "W4A16_NVFP4") {
            compare("weight_scale_2", true,
                    "vLLM keeps one weight_scale_2 for the fused layer: the other shards' block scales were computed for their own, "
                    "so they load with wrong numbers");
            compare("input_scale", false, "vLLM uses one input_scale for the fused layer: other activations than QuantLab evaluated");
        } else if (a == "FP8") {
            compare("weight_scale", false, "vLLM requantizes the shards to the largest weight_scale: re-rounded weights");
            compare("input_scale", false, "vLLM uses the largest input_scale for the fused layer: other activations than QuantLab evaluated");
        }
    }
    ctx.ran("fused-scales", std::to_string(fused) + " fused group(s)");

    if (!f.manifest) {
        ctx.skipped("reproduces-quantlab", "no quantlab_export.json (not a QuantLab export): nothing to compare with");
    } else {
        int64_t n = 0;
        for (const auto& [name, m] : f.manifest->layers) {
            const auto it = decoded.find(name);
            if (it == decoded.end()) {
                if (!f.modules.count(name))
                    ctx.error("reproduces-quantlab", name, "QuantLab exported this layer but the checkpoint has no tensors for it",
                              std::string(kConsumer) + " loads the model without it (or fails)", "export again");
                continue;
            }
            ++n;
            if (weight_digest(it->second.data(), static_cast<int64_t>(it->second.size())) != m.weight_sha256)
                ctx.error("reproduces-quantlab", name,
                          "the packed weight decodes to other values than the weight QuantLab evaluated (SHA-256 differs)",
                          std::string(kConsumer) + " loads the layer with wrong numbers", "export again (packing or nibble order is wrong)");
        }
        ctx.ran("reproduces-quantlab", std::to_string(n) + " layer(s) against their SHA-256");
    }

    // KV cache (modelopt/torch/export/quant_utils.py _KV_CACHE_REPLACEMENTS).
    const bool kv = q.contains("kv_cache_quant_algo") && !q["kv_cache_quant_algo"].is_null();
    std::vector<std::string> kv_tensors;
    for (const std::string& name : f.checkpoint->names()) {
        const std::string p = name.substr(name.rfind('.') + 1);
        if (p == "k_scale" || p == "v_scale") kv_tensors.push_back(name);
    }
    if (kv) {
        const std::string kalgo = q["kv_cache_quant_algo"].is_string() ? q["kv_cache_quant_algo"].get<std::string>() : "";
        if (kalgo != "FP8" && kalgo != "NVFP4")
            ctx.error("kv-cache", qc_path + " kv_cache_quant_algo", "is " + q["kv_cache_quant_algo"].dump(),
                      "vLLM refuses it (FP8 or NVFP4)", "use FP8 or NVFP4");
        int64_t attention = 0;
        for (const std::string& m : f.matrix_modules()) {
            const size_t dot = m.rfind('.');
            if (dot == std::string::npos || m.compare(dot + 1, std::string::npos, "k_proj") != 0) continue;
            ++attention;
            const std::string base = m.substr(0, dot);
            for (const std::string& name : {m + ".k_scale", base + ".v_proj.v_scale"}) {
                if (!f.has(name)) {
                    ctx.error("kv-cache", name, "missing while kv_cache_quant_algo is " + kalgo,
                              "vLLM falls back to a scale of 1.0: the KV cache is quantized with wrong numbers", "export the calibrated k/v scales");
                    continue;
                }
                const ExportTensor t = f.tensor(name);
                if (t.dtype != SafetensorsDtype::F32 || t.bytes.size() != 4 || !(first_f32(t) > 0) || !std::isfinite(first_f32(t)))
                    ctx.error("kv-cache", name, "expected one finite float32 > 0", "vLLM ignores it or divides by zero", "export the calibrated scale");
            }
        }
        ctx.ran("kv-cache", std::to_string(attention) + " attention module(s)");
    } else if (!kv_tensors.empty()) {
        ctx.warning("kv-cache", kv_tensors.front(), "k/v scales are stored but kv_cache_quant_algo is null",
                    "vLLM uses them only with --kv-cache-dtype fp8", "set kv_cache_quant_algo or drop the scales");
        ctx.ran("kv-cache", "scales without kv_cache_quant_algo");
    } else {
        ctx.ran("kv-cache", "no KV-cache quantization");
    }
}

}  // namespace ql
