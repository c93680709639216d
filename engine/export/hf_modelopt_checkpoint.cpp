// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/hf_modelopt_checkpoint.h"

#include <ATen/Functions.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/export/kv_cache_export.h"
#include "engine/export/export_validator.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/recipe.h"

namespace ql {
namespace {

using nlohmann::json;

constexpr const char* kQuantConfig = "hf_quant_config.json";

int64_t group_of(const json& j, const std::string& where) {
    if (!j.contains("group_size") || j["group_size"].is_null()) return 0;
    if (!j["group_size"].is_number_integer()) throw UserError(where + ".group_size: expected an integer");
    return j["group_size"].get<int64_t>();
}

std::string algo_of(const json& j, const std::string& where) {
    if (!j.contains("quant_algo") || !j["quant_algo"].is_string()) throw UserError(where + ".quant_algo: expected a string");
    return j["quant_algo"].get<std::string>();
}

ExportTensor read_tensor(const SafetensorsCheckpoint& c, const std::string& name) {
    const SafetensorsFile::TensorInfo& info = c.info(name);
    const TensorBytes b = c.bytes(name);
    return ExportTensor{name, info.dtype, info.shape, std::vector<uint8_t>(b.data, b.data + b.size)};
}

QuantizerPatch patch_for(const QuantOptions& o, bool dynamic) {
    QuantizerPatch p;
    p.enabled = true;
    p.format = o.format;
    if (!o.granularity.empty()) p.granularity = o.granularity;
    if (o.group_size > 0) p.group_size = o.group_size;
    p.dynamic = dynamic;
    return p;
}

}  // namespace

bool is_hf_modelopt_checkpoint(const std::string& folder) {
    std::error_code ec;
    return std::filesystem::is_regular_file(std::filesystem::path(folder) / kQuantConfig, ec);
}

HfModeloptModel load_hf_modelopt_checkpoint(const std::string& folder) {
    const std::string qc_path = folder + "/" + kQuantConfig;
    const std::string text = read_whole_file(qc_path, "Model Optimizer quantization config");
    json qc;
    try {
        qc = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(qc_path + ": not valid JSON: " + e.what());
    }
    if (!qc.is_object() || !qc.contains("quantization") || !qc["quantization"].is_object())
        throw UserError(qc_path + ": quantization: expected an object");
    const json& q = qc["quantization"];
    std::string kv_algo;
    if (q.contains("kv_cache_quant_algo") && !q["kv_cache_quant_algo"].is_null()) {
        if (!q["kv_cache_quant_algo"].is_string())
            throw UserError(qc_path + ": quantization.kv_cache_quant_algo: expected a string or null");
        kv_algo = q["kv_cache_quant_algo"].get<std::string>();
    }
    const std::string algo = algo_of(q, qc_path + ": quantization");
    std::vector<std::string> excluded;
    if (q.contains("exclude_modules") && !q["exclude_modules"].is_null()) {
        if (!q["exclude_modules"].is_array()) throw UserError(qc_path + ": quantization.exclude_modules: expected a list");
        for (const json& e : q["exclude_modules"]) {
            if (!e.is_string()) throw UserError(qc_path + ": quantization.exclude_modules: expected strings");
            excluded.push_back(e.get<std::string>());
        }
    }
    std::map<std::string, HfLayerFormat> mixed;
    const bool is_mixed = algo == "MIXED_PRECISION";
    if (is_mixed) {
        if (!q.contains("quantized_layers") || !q["quantized_layers"].is_object())
            throw UserError(qc_path + ": quantization.quantized_layers: expected an object for MIXED_PRECISION");
        for (auto it = q["quantized_layers"].begin(); it != q["quantized_layers"].end(); ++it) {
            const std::string where = qc_path + ": quantization.quantized_layers." + it.key();
            mixed[it.key()] = hf_format_named(algo_of(*it, where), group_of(*it, where), where);
        }
    }
    const HfLayerFormat single = is_mixed ? HfLayerFormat{} : hf_format_named(algo, group_of(q, qc_path + ": quantization"), qc_path);

    const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(folder);
    HfModeloptModel out;
    out.model = create_model_uninitialised(read_hf_config(folder + "/config.json"));
    Model& model = *out.model;

    // Which layers are quantized, and their stored tensors.
    std::vector<HfExportLayer> layers;
    std::vector<LinearLayer*> linears;
    for (LinearLayer* l : model.linear_layers()) {
        const HfLayerFormat* f = nullptr;
        if (is_mixed) {
            const auto it = mixed.find(l->name);
            if (it != mixed.end()) f = &it->second;
        } else {
            bool skip = false;
            for (const std::string& pattern : excluded) skip = skip || glob_match(pattern, l->name);
            if (!skip) f = &single;
        }
        if (!f) continue;
        const std::vector<int64_t> shape = weight_matrix_shape(*l);
        layers.push_back({l->name, *f, shape[0], shape[1]});
        linears.push_back(l);
    }
    for (const auto& [name, f] : mixed)
        if (!model.find_layer(name)) throw UserError(qc_path + ": quantized_layers: '" + name + "' is not a Linear layer of the model");

    // The KV cache's k_scale / v_scale (kv_cache_export.h).
    const KvCacheImport kv = read_hf_modelopt_kv_cache(checkpoint, kv_algo, model, qc_path);
    std::vector<ExportTensor> stored;
    std::set<std::string> used = kv.tensors;
    for (const HfExportLayer& l : layers) {
        std::vector<std::string> names;
        for (const ExpectedTensor& e : hf_expected_tensors(l.layer, l.format, l.out, l.in)) names.push_back(e.name);
        names.push_back(l.layer + ".pre_quant_scale");  // optional for W4A16_AWQ
        for (const std::string& n : names)
            if (checkpoint.contains(n) && used.insert(n).second) stored.push_back(read_tensor(checkpoint, n));
    }
    std::map<std::string, const ExportTensor*> by_name;
    for (const ExportTensor& t : stored) by_name[t.name] = &t;
    validate_hf_export(layers, by_name, checkpoint.path());

    // Dequantized weights (file layout: GPT-2 Conv1D [in, out]) and every other tensor.
    std::map<std::string, at::Tensor> state;
    std::vector<at::Tensor> dequantized;
    for (size_t i = 0; i < layers.size(); ++i) {
        const HfExportLayer& l = layers[i];
        std::vector<ExportTensor> mine;
        for (const ExportTensor& t : stored)
            if (t.name.compare(0, l.layer.size() + 1, l.layer + ".") == 0) mine.push_back(t);
        const std::vector<float> w = dequantize_hf_layer(l.layer, l.format, l.out, l.in, mine);
        at::Tensor t = at::from_blob(const_cast<float*>(w.data()), {l.out, l.in}, at::kFloat).clone();
        dequantized.push_back(t);
        state[l.layer + ".weight"] = linears[i]->file_layout_in_out ? t.t().contiguous() : t;
    }
    for (const std::string& name : checkpoint.names()) {
        if (used.count(name) || state.count(name)) continue;
        const SafetensorsDtype dtype = checkpoint.info(name).dtype;
        state[name] = torch_dtype_of(dtype) ? safetensors_tensor(checkpoint, name) : load_float32(checkpoint, name);
    }
    load_state(model, state, checkpoint.path());

    // The quantizers, as a recipe naming each layer.
    Recipe recipe;
    recipe.name = "hf-modelopt";
    recipe.description = "Model Optimizer HF checkpoint " + folder;
    recipe.source = qc_path;
    for (const HfExportLayer& l : layers) {
        recipe.quant_cfg.push_back({l.layer + ".weight_quantizer", patch_for(l.format.weight, false)});
        if (l.format.input_quantized)
            recipe.quant_cfg.push_back({l.layer + ".input_quantizer", patch_for(l.format.input, l.format.input_dynamic)});
    }
    recipe.kv_cache = kv.settings;
    out.quantization = std::make_unique<QuantizedModel>(model, recipe);
    for (const auto& [attention, amax] : kv.amax) {
        KvCacheQuantizer* k = out.quantization->find_kv_cache(attention);
        if (!k) throw std::logic_error("hf-modelopt import: no KV quantizer for " + attention);
        k->set_amax(amax.first, amax.second);
        k->set_enabled(true);
    }
    for (size_t i = 0; i < layers.size(); ++i) {
        const HfExportLayer& l = layers[i];
        LayerQuantizer& lq = *out.quantization->find(l.layer);
        lq.pin_quantized_weight(dequantized[i].view(lq.layer().weight.sizes()));
        if (lq.input_needs_amax()) {
            float s;
            std::memcpy(&s, by_name.at(l.layer + ".input_scale")->bytes.data(), sizeof s);
            lq.set_input_amax(input_amax_for_scale(l.format, s, checkpoint.path() + ": " + l.layer + ".input_scale"));
        }
        const auto pqs = by_name.find(l.layer + ".pre_quant_scale");
        if (pqs != by_name.end()) {
            const ExportTensor& t = *pqs->second;
            if (t.dtype != SafetensorsDtype::F32 || t.shape != std::vector<int64_t>{l.in})
                throw UserError(checkpoint.path() + ": " + t.name + ": expected F32 [" + std::to_string(l.in) + "]");
            lq.set_pre_quant_scale(at::from_blob(const_cast<uint8_t*>(t.bytes.data()), {l.in}, at::kFloat).clone());
        }
        lq.set_enabled(true);
    }
    return out;
}

}  // namespace ql
