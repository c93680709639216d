// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/compressed_tensors_export.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/export/export_manifest.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/whole_file.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr uint64_t kShardBytes = 5ull << 30;  // transformers' default max_shard_size "5GB"
// The compressed-tensors release whose layout and schema this writes (quantization_config.version).
constexpr const char* kCompressedTensorsVersion = "0.20.0";

bool keep_source_file(const std::string& name) {
    return !is_hf_weights_file(name) && name != "config.json" && name != "hf_quant_config.json" &&
           name.rfind("quantlab_", 0) != 0 && name.rfind("ptq_report", 0) != 0 && name.rfind("train_report", 0) != 0 &&
           name.rfind("training_state", 0) != 0;
}

json kv_cache_scheme_json() {
    // vLLM accepts float 8-bit, tensor strategy, symmetric (compressed_tensors.py validate_kv_cache_scheme).
    CtArgs a;
    a.num_bits = 8;
    a.type = "float";
    a.strategy = "tensor";
    return ct_args_to_json(a);
}

std::vector<uint8_t> f32_bytes(float v) {
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &v, 4);
    return b;
}

}  // namespace

json ct_args_to_json(const CtArgs& a) {
    json j = {{"num_bits", a.num_bits}, {"type", a.type}, {"symmetric", a.symmetric}, {"strategy", a.strategy}};
    j["group_size"] = a.group_size > 0 ? json(a.group_size) : json(nullptr);
    if (a.dynamic == "false") j["dynamic"] = false;
    else if (a.dynamic == "true") j["dynamic"] = true;
    else j["dynamic"] = a.dynamic;
    if (!a.scale_dtype.empty()) j["scale_dtype"] = a.scale_dtype;
    if (!a.observer.empty()) j["observer"] = a.observer;
    return j;
}

const std::set<std::string>& ct_args_keys() {
    static const std::set<std::string> known = {"num_bits",  "type",     "symmetric",   "group_size",     "strategy",
                                                "block_structure", "dynamic", "actorder",  "scale_dtype", "zp_dtype",
                                                "observer",  "observer_kwargs"};
    return known;
}

CtArgs ct_args_from_json(const json& j, const std::string& where) {
    if (!j.is_object()) throw UserError(where + ": expected an object (QuantizationArgs)");
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!ct_args_keys().count(it.key()))
            throw UserError(where + "." + it.key() + ": unknown key (compressed-tensors QuantizationArgs forbids extra keys: "
                            "the config fails to load)");
    CtArgs a;
    if (j.contains("num_bits")) {
        if (!j["num_bits"].is_number_integer()) throw UserError(where + ".num_bits: expected an integer");
        a.num_bits = j["num_bits"].get<int>();
    }
    if (j.contains("type")) {
        if (!j["type"].is_string() || (j["type"] != "int" && j["type"] != "float")) throw UserError(where + ".type: expected \"int\" or \"float\"");
        a.type = j["type"].get<std::string>();
    }
    if (j.contains("symmetric")) {
        if (!j["symmetric"].is_boolean()) throw UserError(where + ".symmetric: expected true or false");
        a.symmetric = j["symmetric"].get<bool>();
    }
    if (j.contains("group_size") && !j["group_size"].is_null()) {
        if (!j["group_size"].is_number_integer()) throw UserError(where + ".group_size: expected an integer or null");
        a.group_size = j["group_size"].get<int64_t>();
        if (a.group_size == -1) {
            a.group_size = 0;
            if (!j.contains("strategy")) a.strategy = "channel";
        }
    }
    if (j.contains("strategy") && !j["strategy"].is_null()) {
        static const std::set<std::string> strategies = {"tensor", "channel", "group", "block", "token", "tensor_group", "attn_head"};
        if (!j["strategy"].is_string() || !strategies.count(j["strategy"].get<std::string>()))
            throw UserError(where + ".strategy: expected one of tensor, channel, group, block, token, tensor_group, attn_head");
        a.strategy = j["strategy"].get<std::string>();
    } else if (a.strategy.empty()) {
        a.strategy = a.group_size > 0 ? "group" : "tensor";  // compressed-tensors validate_model_after
    }
    if (j.contains("dynamic")) {
        const json& d = j["dynamic"];
        if (d.is_boolean()) a.dynamic = d.get<bool>() ? "true" : "false";
        else if (d.is_string() && d == "local") a.dynamic = "local";
        else throw UserError(where + ".dynamic: expected true, false or \"local\"");
    }
    if (j.contains("scale_dtype") && j["scale_dtype"].is_string()) a.scale_dtype = j["scale_dtype"].get<std::string>();
    if (j.contains("observer") && j["observer"].is_string()) a.observer = j["observer"].get<std::string>();
    if ((a.strategy == "group" || a.strategy == "tensor_group") && a.group_size <= 0)
        throw UserError(where + ".group_size: strategy " + a.strategy + " needs a positive group_size");
    return a;
}

std::string ct_config_with_quantization(const std::string& config_json, const std::vector<CtExportLayer>& layers,
                                        const std::vector<std::string>& excluded, const std::optional<KvCacheScales>& kv,
                                        const std::string& where) {
    ojson config = ojson::parse(config_json, nullptr, false);
    if (!config.is_object()) throw UserError(where + ": not a JSON object");
    if (layers.empty()) throw UserError("compressed-tensors export: the model has no quantized layer");
    // One config group per distinct scheme, in the order of the schemes' first layers.
    std::vector<std::pair<CtScheme, std::vector<std::string>>> groups;
    for (const CtExportLayer& l : layers) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == l.scheme; });
        if (it == groups.end()) groups.push_back({l.scheme, {l.layer}});
        else it->second.push_back(l.layer);
    }
    json cg = json::object();
    std::set<std::string> formats;
    for (size_t i = 0; i < groups.size(); ++i) {
        const CtScheme& s = groups[i].first;
        json g = {{"weights", ct_args_to_json(s.weights)},
                  {"input_activations", s.input ? ct_args_to_json(*s.input) : json(nullptr)},
                  {"output_activations", nullptr},
                  {"format", s.format}};
        // Module names, not the class name "Linear": compressed-tensors' offline tools match
        // targets by name only, and "Linear" would also take the embedding's `weight` for the
        // formats that store `weight` (entrypoints/convert, utils/match.py match_quantizable_tensors).
        g["targets"] = groups[i].second;
        cg["group_" + std::to_string(i)] = g;
        formats.insert(s.format);
    }
    json qc = {{"config_groups", cg},
               {"format", formats.size() == 1 ? *formats.begin() : std::string("mixed-precision")},
               {"global_compression_ratio", nullptr},
               {"ignore", excluded},
               {"kv_cache_scheme", kv ? kv_cache_scheme_json() : json(nullptr)},
               {"quant_method", "compressed-tensors"},
               {"quantization_status", "compressed"},
               {"sparsity_config", json::object()},
               {"transform_config", json::object()},
               {"version", kCompressedTensorsVersion}};
    config["quantization_config"] = ojson::parse(qc.dump());
    return config.dump(2) + "\n";
}

namespace {

// The layers the export writes (in the model's order) and the Linear layers it leaves in high
// precision (`ignore`, sorted); UserError for what compressed-tensors cannot represent.
void collect_ct_layers(const QuantizedModel& q, std::vector<CtExportLayer>& layers, std::vector<LayerQuantizer*>& quantizers,
                       std::vector<std::string>& excluded) {
    const Model& model = q.model();
    std::set<const void*> embedding_storage;
    for (const EmbeddingLayer* e : model.embedding_layers()) embedding_storage.insert(e->weight.data_ptr());
    for (const auto& lp : q.layers()) {
        LayerQuantizer& l = *lp;
        if (!l.weight_enabled()) {
            if (l.input_enabled())
                throw UserError("layer " + l.name() + ": input quantization without weight quantization has no compressed-tensors layout");
            if (l.layer().kind() == LayerKind::Linear) excluded.push_back(l.name());
            continue;
        }
        if (l.input_configured() && !l.input_enabled())
            throw UserError("layer " + l.name() + ": its input quantizer is switched off; the export would switch it on again");
        if (embedding_storage.count(l.layer().weight.data_ptr()))
            throw UserError("layer " + l.name() + ": its weight is tied to the input embedding, which stays in high precision; "
                            "exclude it from quantization (e.g. {\"quantizer_name\": \"*lm_head*\", \"enable\": false})");
        const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
        layers.push_back({l.name(), ct_scheme_of(l), shape[0], shape[1]});
        quantizers.push_back(&l);
    }
    std::sort(excluded.begin(), excluded.end());
    if (layers.empty()) throw UserError("compressed-tensors export: the model has no quantized layer (nothing to export as low-bit)");
}

}  // namespace

nlohmann::json ct_plan_quantization_config(const QuantizedModel& q) {
    std::vector<CtExportLayer> layers;
    std::vector<LayerQuantizer*> quantizers;
    std::vector<std::string> excluded;
    collect_ct_layers(q, layers, quantizers, excluded);
    const std::optional<KvCacheScales> no_kv;  // a plan carries no calibrated KV-cache scales
    return json::parse(ct_config_with_quantization("{}", layers, excluded, no_kv, "plan"))["quantization_config"];
}

std::map<std::string, CtScheme> ct_layer_schemes(const nlohmann::json& qc, const std::string& where) {
    if (!qc.is_object() || !qc.contains("config_groups") || !qc["config_groups"].is_object())
        throw UserError(where + ": no config_groups object (a compressed-tensors quantization_config)");
    std::map<std::string, CtScheme> out;
    for (const auto& [name, g] : qc["config_groups"].items()) {
        const std::string at = where + ": config_groups." + name;
        if (!g.is_object() || !g.contains("weights") || !g.contains("targets") || !g["targets"].is_array() ||
            !g.contains("format") || !g["format"].is_string())
            throw UserError(at + " needs weights, targets and format");
        CtScheme s;
        s.format = g["format"].get<std::string>();
        s.weights = ct_args_from_json(g["weights"], at + ".weights");
        if (g.contains("input_activations") && !g["input_activations"].is_null())
            s.input = ct_args_from_json(g["input_activations"], at + ".input_activations");
        for (const json& t : g["targets"]) {
            if (!t.is_string()) throw UserError(at + ".targets must list module names");
            if (!out.emplace(t.get<std::string>(), s).second) throw UserError(at + ": module " + t.get<std::string>() + " is in two groups");
        }
    }
    return out;
}

FolderExportResult export_compressed_tensors(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                             bool force, JobSink& sink, const CancellationToken& cancel,
                                             const FolderCheck& before_commit) {
    const Model& model = q.model();
    std::vector<CtExportLayer> layers;
    std::vector<LayerQuantizer*> quantizers;
    std::vector<std::string> excluded;
    collect_ct_layers(q, layers, quantizers, excluded);
    const std::optional<KvCacheScales>& kv = q.kv_cache_scales();
    if (kv && kv->format != "fp8_e4m3")
        throw UserError("compressed-tensors export: a " + kv->format + " KV cache has no compressed-tensors kv_cache_scheme vLLM "
                        "loads (float 8-bit per tensor or per head only); export with --as hf-modelopt or use kv_cache fp8_e4m3");
    const std::string config_path = source_folder + "/config.json";
    const std::string config_text = ct_config_with_quantization(read_whole_file(config_path, "model config"), layers, excluded, kv, config_path);

    // Pack (each layer checks its codes reproduce the quantized weight) and validate.
    ExportManifest manifest;
    manifest.layout = "compressed-tensors";
    manifest.producer_version = quantlab_version();
    manifest.fused_scale_groups = q.shared_weight_groups();
    std::vector<ExportTensor> packed;
    for (size_t i = 0; i < quantizers.size(); ++i) {
        cancel.throw_if_cancelled();
        sink.progress(static_cast<int64_t>(i), static_cast<int64_t>(quantizers.size()), "pack");
        LayerQuantizer& l = *quantizers[i];
        CtPackedLayer p = pack_ct_layer(l, layers[i].scheme);
        const at::Tensor w = l.quantized_weight().reshape({layers[i].out, layers[i].in}).to(at::kCPU, at::kFloat).contiguous();
        ManifestLayer m{layers[i].scheme.key(), weight_digest(w.data_ptr<float>(), w.numel()), std::nullopt};
        if (layers[i].scheme.format == "nvfp4-pack-quantized") m.nvfp4_global_scale = p.nvfp4_global_scale;
        manifest.layers[l.name()] = m;
        for (ExportTensor& t : p.tensors) packed.push_back(std::move(t));
    }
    if (kv) {
        manifest.kv_cache_format = kv->format;
        for (const KvLayerScales& k : kv->layers) {
            packed.push_back({k.attention + ".k_scale", SafetensorsDtype::F32, {1}, f32_bytes(kv_scale_of(k.k_amax))});
            packed.push_back({k.attention + ".v_scale", SafetensorsDtype::F32, {1}, f32_bytes(kv_scale_of(k.v_amax))});
        }
    }
    {
        std::set<std::string> names;
        for (const ExportTensor& t : packed)
            if (!names.insert(t.name).second) throw UserError("compressed-tensors export: tensor " + t.name + " twice");
        for (const CtExportLayer& l : layers)
            for (const ExpectedTensor& e : ct_expected_tensors(l.layer, l.scheme, l.out, l.in)) {
                const auto it = std::find_if(packed.begin(), packed.end(), [&](const ExportTensor& t) { return t.name == e.name; });
                if (it == packed.end() || it->dtype != e.dtype || it->shape != e.shape)
                    throw UserError("compressed-tensors export: " + e.name + " does not match its layout (internal)");
            }
    }

    // Every other parameter as the model holds it.
    std::set<std::string> quantized_weights;
    for (const auto& l : layers) quantized_weights.insert(l.layer + ".weight");
    const std::vector<std::pair<std::string, at::Tensor>> state = model.file_state(quantized_weights);
    std::vector<at::Tensor> keep_alive;
    std::vector<SafetensorsWriteEntry> entries;
    for (const auto& [name, t] : state) {
        keep_alive.push_back(t.to(at::kCPU).contiguous());  // files are written from CPU copies
        entries.push_back(safetensors_entry(name, keep_alive.back()));
    }
    for (const ExportTensor& t : packed)
        entries.push_back(SafetensorsWriteEntry{t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});

    cancel.throw_if_cancelled();
    sink.progress(0, 1, "write");
    ExportFolder folder(out, force);
    folder.copy_from(source_folder, keep_source_file);
    write_safetensors_checkpoint(folder.file(""), std::move(entries), kShardBytes, {{"format", "pt"}});
    folder.write("config.json", config_text);
    folder.write(kExportManifestFile, export_manifest_json(manifest));
    cancel.throw_if_cancelled();
    if (before_commit) before_commit(folder.partial_path());
    folder.commit();
    sink.progress(1, 1, "write");
    return {folder.files(), folder.bytes(), {}};
}

}  // namespace ql
