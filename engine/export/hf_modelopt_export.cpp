// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/hf_modelopt_export.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/export/export_folder.h"
#include "engine/export/export_manifest.h"
#include "engine/export/kv_cache_export.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/whole_file.h"
#include "engine/quant/plain_weights.h"
#include "engine/quant/quant_plan.h"

namespace ql {
namespace {

using ojson = nlohmann::ordered_json;

constexpr uint64_t kShardBytes = 5ull << 30;  // transformers' default max_shard_size "5GB"

ojson producer() { return {{"name", "quantlab"}, {"version", quantlab_version()}}; }

// One quantized_layers / single-format entry (modelopt quant_utils.py process_layer_quant_config).
ojson layer_entry(const HfLayerFormat& f) {
    ojson j = {{"quant_algo", f.quant_algo}};
    if (f.group_size > 0) j["group_size"] = f.group_size;
    if (f.quant_algo == "W4A16_AWQ" || f.quant_algo == "NVFP4_AWQ") {
        j["has_zero_point"] = false;
        j["pre_quant_scale"] = true;
    }
    return j;
}

std::string key_of(const HfLayerFormat& f) { return layer_entry(f).dump(); }

// compressed-tensors config group (modelopt convert_hf_config.py _quant_algo_to_group_config).
ojson config_group(const HfLayerFormat& f) {
    auto side = [&](int bits, const char* type, bool dynamic) {
        ojson s = {{"dynamic", dynamic}, {"num_bits", bits}, {"type", type}};
        if (f.group_size > 0) s["group_size"] = f.group_size;
        return s;
    };
    ojson g = ojson::object();
    const std::string& a = f.quant_algo;
    if (a == "FP8") {
        g["input_activations"] = side(8, "float", false);
        g["weights"] = side(8, "float", false);
    } else if (a == "NVFP4" || a == "NVFP4_AWQ") {
        g["input_activations"] = side(4, "float", false);
        g["weights"] = side(4, "float", false);
    } else if (a == "W4A16_NVFP4") {
        g["weights"] = side(4, "float", false);
    } else if (a == "W4A16_AWQ") {
        g["weights"] = side(4, "int", false);
    } else if (a == "MXFP4") {
        g["input_activations"] = side(4, "float", true);
        g["weights"] = side(4, "float", false);
    }
    return g;
}

bool single_format(const std::vector<HfExportLayer>& layers) {
    std::set<std::string> keys;
    for (const auto& l : layers) keys.insert(key_of(l.format));
    return keys.size() == 1;
}

bool keep_source_file(const std::string& name) {
    return !is_hf_weights_file(name) && name != "config.json" && name != "hf_quant_config.json" &&
           name.rfind("quantlab_", 0) != 0 && name.rfind("ptq_report", 0) != 0 && name.rfind("train_report", 0) != 0 &&
           name.rfind("training_state", 0) != 0;
}

ojson nullable(const std::string& s) { return s.empty() ? ojson(nullptr) : ojson(s); }

// config.json's kv_cache_scheme (modelopt convert_hf_config.py).
ojson kv_cache_scheme(const std::string& algo) {
    if (algo.empty()) return nullptr;
    if (algo == "FP8") return {{"dynamic", false}, {"num_bits", 8}, {"type", "float"}};
    return algo;
}

}  // namespace

std::string hf_quant_config_json(const std::vector<HfExportLayer>& layers, const std::vector<std::string>& excluded,
                                 const std::string& kv_algo) {
    if (layers.empty()) throw UserError("hf-modelopt export: the model has no quantized layer");
    ojson q;
    if (single_format(layers)) {
        q = layer_entry(layers.front().format);
        q["kv_cache_quant_algo"] = nullable(kv_algo);
        q["exclude_modules"] = excluded;
    } else {
        q = {{"quant_algo", "MIXED_PRECISION"}, {"kv_cache_quant_algo", nullable(kv_algo)}};
        ojson ql = ojson::object();
        for (const auto& l : layers) ql[l.layer] = layer_entry(l.format);
        q["quantized_layers"] = ql;
        q["exclude_modules"] = excluded;
    }
    return ojson({{"producer", producer()}, {"quantization", q}}).dump(4) + "\n";
}

std::string hf_config_with_quantization(const std::string& config_json, const std::vector<HfExportLayer>& layers,
                                        const std::vector<std::string>& excluded, const std::string& where,
                                        const std::string& kv_algo) {
    ojson config = ojson::parse(config_json, nullptr, false);
    if (!config.is_object()) throw UserError(where + ": not a JSON object");
    ojson qc = {{"quant_method", "modelopt"}};
    ojson groups = ojson::object();
    if (single_format(layers)) {
        qc["quant_algo"] = layers.front().format.quant_algo;
        ojson g = config_group(layers.front().format);
        g["targets"] = {"Linear"};
        groups["group_0"] = g;
    } else {
        qc["quant_algo"] = "MIXED_PRECISION";
        std::map<std::string, std::vector<std::string>> by_format;
        std::map<std::string, HfLayerFormat> formats;
        for (const auto& l : layers) {
            by_format[key_of(l.format)].push_back(l.layer);
            formats[key_of(l.format)] = l.format;
        }
        int i = 0;
        for (auto& [key, names] : by_format) {
            std::sort(names.begin(), names.end());
            ojson g = config_group(formats[key]);
            g["targets"] = names;
            groups["group_" + std::to_string(i++)] = g;
        }
        ojson ql = ojson::object();
        for (const auto& l : layers) ql[l.layer] = layer_entry(l.format);
        qc["quantized_layers"] = ql;
    }
    qc["ignore"] = excluded;
    qc["config_groups"] = groups;
    qc["kv_cache_scheme"] = kv_cache_scheme(kv_algo);
    qc["producer"] = producer();
    config["quantization_config"] = qc;
    return config.dump(2) + "\n";
}

FolderExportResult export_hf_modelopt(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                      bool force, JobSink& sink, const CancellationToken& cancel, const FolderCheck& before_commit) {
    const Model& model = q.model();
    if (const std::string why = plain_weights_refusal(q); !why.empty())
        throw UserError("hf-modelopt export: " + why +
                        "; export --as fakequant (the rotations folded into the weights) or quantize without online rotations");
    const KvCacheExport kv = hf_modelopt_kv_cache(q);
    // Which layers, in which format: all checked before any packing.
    std::vector<HfExportLayer> layers;
    std::vector<LayerQuantizer*> quantizers;
    std::vector<std::string> excluded;
    std::set<const void*> embedding_storage;
    for (const EmbeddingLayer* e : model.embedding_layers()) embedding_storage.insert(e->weight.data_ptr());
    for (const auto& lp : q.layers()) {
        LayerQuantizer& l = *lp;
        if (!l.weight_enabled()) {
            if (l.input_enabled())
                throw UserError("layer " + l.name() + ": input quantization without weight quantization has no Model Optimizer HF layout");
            if (l.layer().kind() == LayerKind::Linear) excluded.push_back(l.name());
            continue;
        }
        if (l.input_configured() && !l.input_enabled())
            throw UserError("layer " + l.name() + ": its input quantizer is switched off; the export would switch it on again");
        if (embedding_storage.count(l.layer().weight.data_ptr()))
            throw UserError("layer " + l.name() + ": its weight is tied to the input embedding, which stays in high precision; "
                            "exclude it from quantization (e.g. {\"quantizer_name\": \"*lm_head*\", \"enable\": false})");
        const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
        layers.push_back({l.name(), hf_format_of(l), shape[0], shape[1]});
        quantizers.push_back(&l);
    }
    std::sort(excluded.begin(), excluded.end());
    if (layers.empty()) throw UserError("hf-modelopt export: the model has no quantized layer (nothing to export as low-bit)");
    const std::string config_path = source_folder + "/config.json";
    const std::string config_text =
        hf_config_with_quantization(read_whole_file(config_path, "model config"), layers, excluded, config_path, kv.quant_algo);
    const std::string quant_text = hf_quant_config_json(layers, excluded, kv.quant_algo);

    // Pack and validate.
    ExportManifest manifest;
    manifest.layout = "hf-modelopt";
    manifest.producer_version = quantlab_version();
    manifest.fused_scale_groups = q.shared_weight_groups();
    std::vector<ExportTensor> packed;
    for (size_t i = 0; i < quantizers.size(); ++i) {
        cancel.throw_if_cancelled();
        sink.progress(static_cast<int64_t>(i), static_cast<int64_t>(quantizers.size()), "pack");
        std::vector<ExportTensor> t = pack_hf_layer(*quantizers[i], layers[i].format);
        for (ExportTensor& x : t) packed.push_back(std::move(x));
        const at::Tensor w =
            quantizers[i]->quantized_weight().reshape({layers[i].out, layers[i].in}).to(at::kCPU, at::kFloat).contiguous();
        manifest.layers[layers[i].layer] = {layers[i].format.quant_algo, weight_digest(w.data_ptr<float>(), w.numel()), std::nullopt};
    }
    if (!kv.quant_algo.empty()) manifest.kv_cache_format = q.recipe().kv_cache.format;
    std::map<std::string, const ExportTensor*> by_name;
    for (const ExportTensor& t : packed) by_name[t.name] = &t;
    validate_hf_export(layers, by_name, "hf-modelopt export of " + source_folder);

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
    for (const ExportTensor& t : kv.tensors)
        entries.push_back(SafetensorsWriteEntry{t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});

    cancel.throw_if_cancelled();
    sink.progress(0, 1, "write");
    ExportFolder folder(out, force);
    folder.copy_from(source_folder, keep_source_file);
    write_safetensors_checkpoint(folder.file(""), std::move(entries), kShardBytes, {{"format", "pt"}});
    folder.write("config.json", config_text);
    folder.write("hf_quant_config.json", quant_text);
    folder.write(kExportManifestFile, export_manifest_json(manifest));
    cancel.throw_if_cancelled();
    if (before_commit) before_commit(folder.partial_path());
    folder.commit();
    sink.progress(1, 1, "write");
    return {folder.files(), folder.bytes(), kv.warnings};
}

}  // namespace ql
