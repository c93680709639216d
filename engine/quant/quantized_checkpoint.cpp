// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantized_checkpoint.h"

#include <ATen/Functions.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/models/sentence_embedding_config.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

constexpr const char* kRecipeFile = "quantlab_recipe.json";
constexpr const char* kTensorsFile = "quantlab_quant.safetensors";
constexpr int kVersion = 1;

bool is_weights_file(const std::string& name) {
    return name.size() > 12 && (name.rfind(".safetensors") == name.size() - 12 ||
                                name.find(".safetensors.index.json") != std::string::npos);
}

at::Tensor to_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
    return at::from_blob(const_cast<float*>(v.data()), shape, at::kFloat).clone();
}

std::string fs_error(const std::string& what, const fs::path& p, const std::error_code& ec) {
    return what + " " + p.string() + ": " + ec.message();
}

}  // namespace

bool is_quantized_checkpoint(const std::string& folder) {
    std::error_code ec;
    return fs::is_regular_file(fs::path(folder) / kQuantStateFile, ec);
}

void save_quantized_checkpoint(const QuantizedModel& q, const std::string& source_folder, const std::string& out_folder,
                               bool force, const std::vector<std::pair<std::string, std::string>>& extra_files) {
    const fs::path out(out_folder);
    std::error_code ec;
    if (fs::exists(out, ec) && !force)
        throw UserError(out_folder + " already exists (pass --force to replace it)");
    const fs::path partial = out.string() + ".partial";
    fs::remove_all(partial, ec);
    if (!fs::create_directories(partial, ec) && ec) throw UserError(fs_error("cannot create", partial, ec));
    try {
        // The source's other files: config, tokenizer, generation config, QuantLab's records.
        if (!source_folder.empty()) {
            for (const auto& entry : fs::directory_iterator(source_folder)) {
                const std::string name = entry.path().filename().string();
                if (!entry.is_regular_file() || is_weights_file(name) || name.rfind("quantlab_", 0) == 0 ||
                    name.rfind("ptq_report", 0) == 0)
                    continue;
                fs::copy_file(entry.path(), partial / name, ec);
                if (ec) throw UserError(fs_error("cannot copy", entry.path(), ec));
            }
            copy_sentence_module_folders(source_folder, partial.string());  // 1_Pooling/ ...
        }
        write_safetensors((partial / "model.safetensors").string(), q.model().file_state(), {{"format", "pt"}});

        std::vector<std::pair<std::string, at::Tensor>> state;
        json layers = json::object();
        for (const auto& lp : q.layers()) {
            LayerQuantizer& l = *lp;
            if (!l.weight_configured() && !l.input_configured()) continue;
            const std::string& n = l.name();
            json j = {{"weight", describe(l.plan().weight, false)},
                      {"input", describe(l.plan().input, true)},
                      {"weight_enabled", l.weight_enabled()},
                      {"input_enabled", l.input_enabled()},
                      {"weight_pinned", l.weight_pinned()}};
            if (l.weight_configured()) {
                state.emplace_back(n + ".weight_quantized", l.quantized_weight().contiguous());
                const EncodedTensor e = l.encode_weight();
                std::vector<float> scales(e.scales.as<float>(), e.scales.as<float>() + e.scales.numel());
                state.emplace_back(n + ".weight_scale", to_tensor(scales, e.scales.shape));
                if (e.global_scale) state.emplace_back(n + ".weight_global_scale", to_tensor({*e.global_scale}, {}));
            }
            if (l.input_needs_amax() && !std::isnan(l.input_amax()))
                state.emplace_back(n + ".input_amax", to_tensor({l.input_amax()}, {}));
            if (l.pre_quant_scale().defined()) state.emplace_back(n + ".pre_quant_scale", l.pre_quant_scale());
            layers[n] = j;
        }
        json kv_caches = json::object();
        for (const auto& kp : q.kv_caches()) {
            const KvCacheQuantizer& kv = *kp;
            if (!kv.configured()) continue;
            kv_caches[kv.name()] = {{"quantizer", kv.settings().describe()}, {"enabled", kv.enabled()}};
            if (kv.needs_amax() && !kv.key_amax().empty()) {
                const auto count = static_cast<int64_t>(kv.key_amax().size());
                state.emplace_back(kv.name() + ".k_amax", to_tensor(kv.key_amax(), {count}));
                state.emplace_back(kv.name() + ".v_amax", to_tensor(kv.value_amax(), {count}));
            }
        }
        write_safetensors((partial / kTensorsFile).string(), state, {{"format", "quantlab-ptq"}});
        write_file_atomically((partial / kRecipeFile).string(), recipe_to_json(q.recipe()));
        for (const auto& [name, contents] : extra_files) write_file_atomically((partial / name).string(), contents);
        const ModelSize size = q.size();
        json marker = {{"format", "quantlab-quantized-checkpoint"},
                       {"version", kVersion},
                       {"recipe", kRecipeFile},
                       {"tensors", kTensorsFile},
                       {"bits_per_parameter", size.bits_per_parameter()},
                       {"layers", layers},
                       {"kv_cache", kv_caches},
                       // model.safetensors holds the rotated weights; loading installs the online
                       // rotations again (rotation.h) and must not rotate twice.
                       {"rotated", q.rotated()},
                       {"rotation", q.rotation_notes()}};
        write_file_atomically((partial / kQuantStateFile).string(), marker.dump(2) + "\n");

        // Swap in: the old folder (with --force) goes only after the new one is complete.
        const fs::path old = out.string() + ".old";
        fs::remove_all(old, ec);
        const bool had_old = fs::exists(out, ec);
        if (had_old) {
            fs::rename(out, old, ec);
            if (ec) throw UserError(fs_error("cannot move aside", out, ec));
        }
        fs::rename(partial, out, ec);
        if (ec) {
            if (had_old) fs::rename(old, out, ec);
            throw UserError(fs_error("cannot rename into place", partial, ec));
        }
        if (had_old) fs::remove_all(old, ec);
    } catch (...) {
        fs::remove_all(partial, ec);
        throw;
    }
}

std::unique_ptr<QuantizedModel> load_quantization(Model& model, const std::string& folder) {
    if (!is_quantized_checkpoint(folder)) return nullptr;
    std::error_code ec;
    const std::string marker_path = (fs::path(folder) / kQuantStateFile).string();
    const std::string text = read_whole_file(marker_path, "quantization state");
    json marker;
    try {
        marker = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(marker_path + ": not valid JSON: " + e.what());
    }
    if (!marker.is_object() || marker.value("format", "") != "quantlab-quantized-checkpoint")
        throw UserError(marker_path + ": format: expected \"quantlab-quantized-checkpoint\"");
    if (!marker.contains("version") || !marker["version"].is_number_integer() || marker["version"].get<int>() != kVersion)
        throw UserError(marker_path + ": version: expected " + std::to_string(kVersion));
    if (!marker.contains("layers") || !marker["layers"].is_object()) throw UserError(marker_path + ": layers: expected an object");

    const std::string recipe_path = (fs::path(folder) / kRecipeFile).string();
    auto q = std::make_unique<QuantizedModel>(model, parse_recipe(read_whole_file(recipe_path, "recipe"), recipe_path));
    const std::string tensors_path = (fs::path(folder) / kTensorsFile).string();
    const SafetensorsFile file = SafetensorsFile::open(tensors_path);
    std::set<std::string> unused;
    for (const std::string& n : file.names()) unused.insert(n);
    auto take = [&](const std::string& name, bool required) -> at::Tensor {
        if (!unused.count(name)) {
            if (required) throw UserError(tensors_path + ": missing tensor '" + name + "'");
            return at::Tensor();
        }
        unused.erase(name);
        return load_float32(file, name, /*require_finite=*/true);
    };
    const json& layers = marker["layers"];
    for (auto it = layers.begin(); it != layers.end(); ++it)
        if (!q->find(it.key())) throw UserError(marker_path + ": layers: '" + it.key() + "' is not a layer of the model");
    for (const auto& lp : q->layers()) {
        LayerQuantizer& l = *lp;
        if (!l.weight_configured() && !l.input_configured()) continue;
        const std::string& n = l.name();
        if (!layers.contains(n)) throw UserError(marker_path + ": layers: missing '" + n + "' (the recipe quantizes it)");
        const json& j = layers[n];
        auto flag = [&](const char* key) {
            if (!j.contains(key) || !j[key].is_boolean())
                throw UserError(marker_path + ": layers." + n + "." + key + ": expected true or false");
            return j[key].get<bool>();
        };
        if (l.weight_configured()) {
            const at::Tensor wq = take(n + ".weight_quantized", true);
            if (wq.sizes() != l.layer().weight.sizes())
                throw UserError(tensors_path + ": tensor '" + n + ".weight_quantized' has shape " + shape_string(shape_of(wq)) +
                                ", the weight " + shape_string(shape_of(l.layer().weight)));
            l.pin_quantized_weight(wq);
            take(n + ".weight_scale", true);
            take(n + ".weight_global_scale", false);
        }
        if (l.input_needs_amax()) {
            const at::Tensor a = take(n + ".input_amax", true);
            if (a.numel() != 1) throw UserError(tensors_path + ": tensor '" + n + ".input_amax' must hold one value");
            l.set_input_amax(a.item<float>());
        }
        const at::Tensor pqs = take(n + ".pre_quant_scale", false);
        if (pqs.defined()) {
            try {
                l.set_pre_quant_scale(pqs);
            } catch (const UserError& e) {
                throw UserError(tensors_path + ": " + e.what());
            }
        }
        l.set_weight_enabled(flag("weight_enabled"));
        l.set_input_enabled(flag("input_enabled"));
    }
    // KV caches (absent in checkpoints written before they existed: then none may be configured).
    const json kv_caches = marker.contains("kv_cache") ? marker["kv_cache"] : json::object();
    if (!kv_caches.is_object()) throw UserError(marker_path + ": kv_cache: expected an object");
    for (auto it = kv_caches.begin(); it != kv_caches.end(); ++it)
        if (!q->find_kv_cache(it.key()) || !q->find_kv_cache(it.key())->configured())
            throw UserError(marker_path + ": kv_cache: '" + it.key() + "' is not a quantized KV cache of the model");
    for (const auto& kp : q->kv_caches()) {
        KvCacheQuantizer& kv = *kp;
        if (!kv.configured()) continue;
        if (!kv_caches.contains(kv.name()))
            throw UserError(marker_path + ": kv_cache: missing '" + kv.name() + "' (the recipe quantizes its KV cache)");
        const json& j = kv_caches[kv.name()];
        if (!j.is_object() || !j.contains("enabled") || !j["enabled"].is_boolean())
            throw UserError(marker_path + ": kv_cache." + kv.name() + ".enabled: expected true or false");
        if (kv.needs_amax()) {
            const at::Tensor k = take(kv.name() + ".k_amax", true), v = take(kv.name() + ".v_amax", true);
            auto values = [](const at::Tensor& t) {
                const at::Tensor c = t.reshape({-1}).contiguous();
                return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
            };
            try {
                kv.set_amax(values(k), values(v));
            } catch (const UserError& e) {
                throw UserError(tensors_path + ": " + e.what());
            }
        }
        kv.set_enabled(j["enabled"].get<bool>());
    }
    if (!unused.empty()) throw UserError(tensors_path + ": unexpected tensor '" + *unused.begin() + "'");
    // Rotation: the weights in model.safetensors are already rotated.
    const bool rotated = marker.contains("rotated") && marker["rotated"].is_boolean() && marker["rotated"].get<bool>();
    if (q->recipe().rotation.enabled() && !rotated)
        throw UserError(marker_path + ": rotated: the recipe rotates the model, but the checkpoint says its weights are not rotated");
    if (rotated) {
        std::vector<std::string> notes;
        if (marker.contains("rotation") && marker["rotation"].is_array())
            for (const json& n : marker["rotation"])
                if (n.is_string()) notes.push_back(n.get<std::string>());
        install_online_rotations(*q);
        q->mark_rotated(notes);
    }
    return q;
}

}  // namespace ql
