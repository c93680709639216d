// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantized_checkpoint.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/strict_json.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/whole_file.h"
#include "engine/ptq/weight_grid.h"
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

namespace {

std::string shard_name(const std::string& base, int64_t index, int64_t parts) {
    if (parts == 1) return base + ".safetensors";
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05lld-of-%05lld.safetensors", static_cast<long long>(index + 1),
                  static_cast<long long>(parts));
    return base + buf;
}

// The Hugging Face index (huggingface_hub's layout: sorted keys, indent 2).
void write_index(const fs::path& path, const std::map<std::string, std::string>& map, uint64_t total_size) {
    json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", json::object()}};
    for (const auto& [name, shard] : map) index["weight_map"][name] = shard;
    write_file_atomically(path.string(), index.dump(2) + "\n");
}

// Whether a pinned weight stored as BF16 comes back bit for bit when rounded onto the grid of
// the layer's weight (GPTQ's results do: they lie on that grid, and BF16 keeps them within half
// a grid step); the BF16 copy when it does.
at::Tensor snapped_bf16(LayerQuantizer& l, const at::Tensor& quantized) {
    if (l.layer().kind() != LayerKind::Linear) return at::Tensor();
    const QuantSpec spec = l.weight_spec();
    if (!spec.info || spec.info->family == "gguf" || spec.double_quant) return at::Tensor();
    try {
        const at::Tensor w = l.layer().weight.detach().reshape(weight_matrix_shape(l.layer())).to(at::kCPU, at::kFloat);
        const WeightGrid grid(w, spec);
        const at::Tensor bf16 = quantized.to(at::kCPU).to(at::kBFloat16).contiguous();
        const at::Tensor back = grid.quantize(bf16.reshape(w.sizes())).view(quantized.sizes());
        if (!at::equal(back, quantized.to(at::kCPU, at::kFloat))) return at::Tensor();
        // -0 and +0 compare equal: the bits must match too.
        if (!at::equal(back.view(at::kInt), quantized.to(at::kCPU, at::kFloat).contiguous().view(at::kInt))) return at::Tensor();
        return bf16;
    } catch (const UserError&) {
        return at::Tensor();  // a format without a fixed-scale grid: stored as F32
    }
}

}  // namespace

QuantizedCheckpointWriter::QuantizedCheckpointWriter(const QuantizedModel& q, const std::string& source_folder,
                                                     std::string out_folder, bool force, int64_t parts,
                                                     const std::string& resume_state)
    : q_(q), out_(std::move(out_folder)), force_(force), parts_(std::max<int64_t>(1, parts)) {
    const fs::path out(out_);
    std::error_code ec;
    if (fs::exists(out, ec) && !force)
        throw UserError(out_ + " already exists (pass --force to replace it)");
    partial_ = out.string() + ".partial";
    const fs::path partial(partial_);
    if (!resume_state.empty() && fs::is_directory(partial, ec)) {
        const json j = json::parse(resume_state);
        model_map_ = j.at("model_map").get<std::map<std::string, std::string>>();
        quant_map_ = j.at("quant_map").get<std::map<std::string, std::string>>();
        layer_entries_ = j.at("layers").get<std::map<std::string, std::string>>();
        kv_entries_ = j.at("kv_caches").get<std::map<std::string, std::string>>();
        model_bytes_ = j.at("model_bytes").get<uint64_t>();
        quant_bytes_ = j.at("quant_bytes").get<uint64_t>();
        return;
    }
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
    } catch (...) {
        fs::remove_all(partial, ec);
        throw;
    }
}

QuantizedCheckpointWriter::~QuantizedCheckpointWriter() {
    if (finished_) return;
    std::error_code ec;
    fs::remove_all(partial_, ec);
}

void QuantizedCheckpointWriter::write_part(int64_t index, const std::vector<std::string>& parameters,
                                           const std::vector<LayerQuantizer*>& layers,
                                           const std::vector<KvCacheQuantizer*>& kv_caches) {
    const fs::path partial(partial_);
    const std::vector<std::pair<std::string, at::Tensor>> weights = q_.model().file_state_of(parameters);
    if (!weights.empty() || parts_ == 1) {
        const std::string file = shard_name("model", index, parts_);
        write_safetensors((partial / file).string(), weights, {{"format", "pt"}});
        for (const auto& [name, t] : weights) {
            model_map_[name] = file;
            model_bytes_ += t.nbytes();
        }
    }
    std::vector<std::pair<std::string, at::Tensor>> state;
    for (LayerQuantizer* lp : layers) {
        LayerQuantizer& l = *lp;
        if (!l.weight_configured() && !l.input_configured()) continue;
        const std::string& n = l.name();
        json j = {{"weight", describe(l.plan().weight, false)},
                  {"input", describe(l.plan().input, true)},
                  {"weight_enabled", l.weight_enabled()},
                  {"input_enabled", l.input_enabled()},
                  {"weight_pinned", l.weight_pinned()}};
        if (l.weight_configured()) {
            // The forward's weight is stored where loading could not recompute it from the weight:
            // a pinned result (GPTQ, clip search, learned scales) or an importance-guided search.
            if (l.weight_pinned() || !l.weight_spec().importance.empty()) {
                const at::Tensor wq = l.quantized_weight().contiguous();
                const at::Tensor snapped = l.weight_pinned() ? snapped_bf16(l, wq) : at::Tensor();
                state.emplace_back(n + ".weight_quantized", snapped.defined() ? snapped : wq);
                if (snapped.defined()) j["weight_quantized_snap"] = true;
            }
            const EncodedTensor e = l.encode_weight();
            std::vector<float> scales(e.scales.as<float>(), e.scales.as<float>() + e.scales.numel());
            state.emplace_back(n + ".weight_scale", to_tensor(scales, e.scales.shape));
            if (e.global_scale) state.emplace_back(n + ".weight_global_scale", to_tensor({*e.global_scale}, {}));
        }
        if (l.input_needs_amax() && !std::isnan(l.input_amax()))
            state.emplace_back(n + ".input_amax", to_tensor({l.input_amax()}, {}));
        if (l.pre_quant_scale().defined()) state.emplace_back(n + ".pre_quant_scale", l.pre_quant_scale());
        layer_entries_[n] = j.dump();
    }
    for (KvCacheQuantizer* kp : kv_caches) {
        const KvCacheQuantizer& kv = *kp;
        if (!kv.configured()) continue;
        kv_entries_[kv.name()] = json({{"quantizer", kv.settings().describe()}, {"enabled", kv.enabled()}}).dump();
        if (kv.needs_amax() && !kv.key_amax().empty()) {
            const auto count = static_cast<int64_t>(kv.key_amax().size());
            state.emplace_back(kv.name() + ".k_amax", to_tensor(kv.key_amax(), {count}));
            state.emplace_back(kv.name() + ".v_amax", to_tensor(kv.value_amax(), {count}));
        }
    }
    if (!state.empty() || parts_ == 1) {
        const std::string file = shard_name("quantlab_quant", index, parts_);
        write_safetensors((partial / file).string(), state, {{"format", "quantlab-ptq"}});
        for (const auto& [name, t] : state) {
            quant_map_[name] = file;
            quant_bytes_ += t.nbytes();
        }
    }
}

std::string QuantizedCheckpointWriter::state() const {
    return json({{"model_map", model_map_},
                 {"quant_map", quant_map_},
                 {"layers", layer_entries_},
                 {"kv_caches", kv_entries_},
                 {"model_bytes", model_bytes_},
                 {"quant_bytes", quant_bytes_}})
        .dump();
}

void QuantizedCheckpointWriter::finish(const std::vector<std::pair<std::string, std::string>>& extra_files) {
    const fs::path partial(partial_), out(out_);
    std::error_code ec;
    if (parts_ > 1) {
        write_index(partial / "model.safetensors.index.json", model_map_, model_bytes_);
        write_index(partial / (std::string(kTensorsFile) + ".index.json"), quant_map_, quant_bytes_);
    }
    write_file_atomically((partial / kRecipeFile).string(), recipe_to_json(q_.recipe()));
    for (const auto& [name, contents] : extra_files) write_file_atomically((partial / name).string(), contents);
    json layers = json::object(), kv_caches = json::object();
    for (const auto& [name, text] : layer_entries_) layers[name] = json::parse(text);
    for (const auto& [name, text] : kv_entries_) kv_caches[name] = json::parse(text);
    const ModelSize size = q_.size();
    json marker = {{"format", "quantlab-quantized-checkpoint"},
                   {"version", kVersion},
                   {"recipe", kRecipeFile},
                   {"tensors", parts_ > 1 ? std::string(kTensorsFile) + ".index.json" : std::string(kTensorsFile)},
                   {"bits_per_parameter", size.bits_per_parameter()},
                   {"layers", layers},
                   {"kv_cache", kv_caches},
                   // model.safetensors holds the rotated weights; loading installs the online
                   // rotations again (rotation.h) and must not rotate twice.
                   {"rotated", q_.rotated()},
                   {"rotation", q_.rotation_notes()}};
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
    finished_ = true;
    if (had_old) fs::remove_all(old, ec);
}

void save_quantized_checkpoint(const QuantizedModel& q, const std::string& source_folder, const std::string& out_folder,
                               bool force, const std::vector<std::pair<std::string, std::string>>& extra_files) {
    QuantizedCheckpointWriter writer(q, source_folder, out_folder, force, 1);
    std::vector<std::string> parameters;
    for (const auto& [name, t] : q.model().named_parameters()) parameters.push_back(name);
    std::vector<LayerQuantizer*> layers;
    for (const auto& l : q.layers()) layers.push_back(l.get());
    std::vector<KvCacheQuantizer*> kv;
    for (const auto& k : q.kv_caches()) kv.push_back(k.get());
    writer.write_part(0, parameters, layers, kv);
    writer.finish(extra_files);
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
    // One file, or shards with an index (a checkpoint written block by block).
    const std::string index_path = (fs::path(folder) / (std::string(kTensorsFile) + ".index.json")).string();
    const std::string tensors_path = fs::exists(index_path, ec) ? index_path : (fs::path(folder) / kTensorsFile).string();
    const SafetensorsCheckpoint file = SafetensorsCheckpoint::open(tensors_path);
    std::set<std::string> unused;
    for (const std::string& n : file.names()) unused.insert(n);
    auto has = [&](const std::string& name) { return unused.count(name) > 0; };
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
            // Absent: the plain rounding of the weight, recomputed (checkpoints since the
            // layer-by-layer pipeline store only what cannot be recomputed).
            if (flag("weight_pinned") && !has(n + ".weight_quantized"))
                throw UserError(tensors_path + ": missing tensor '" + n + ".weight_quantized' (layer " + n + " is pinned)");
            const at::Tensor stored = take(n + ".weight_quantized", false);
            if (stored.defined()) {
                if (stored.sizes() != l.layer().weight.sizes())
                    throw UserError(tensors_path + ": tensor '" + n + ".weight_quantized' has shape " +
                                    shape_string(shape_of(stored)) + ", the weight " + shape_string(shape_of(l.layer().weight)));
                at::Tensor wq = stored;
                if (j.contains("weight_quantized_snap") && j["weight_quantized_snap"] == true) {
                    // BF16 values rounded back onto the grid of the weight (quantized_checkpoint.h).
                    const at::Tensor w = l.layer().weight.detach().reshape(weight_matrix_shape(l.layer())).to(at::kFloat);
                    wq = WeightGrid(w, l.weight_spec()).quantize(stored.reshape(w.sizes())).view(stored.sizes());
                }
                l.pin_quantized_weight(wq);
            }
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
