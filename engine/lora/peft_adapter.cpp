// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/peft_adapter.h"

#include <ATen/Functions.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/export/export_folder.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/safetensors_tensors.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

nlohmann::json peft_read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path + ": cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw UserError(path + ": not valid JSON: " + e.what());
    }
}

}  // namespace

std::vector<std::string> write_peft_adapter(const std::string& folder, const LoraAdapters& adapters,
                                            const std::string& base_model_name_or_path, const nlohmann::json& record,
                                            bool force) {
    const LoraSettings& s = adapters.settings();
    nlohmann::json modules = nlohmann::json::array();
    bool conv1d = false;
    for (const LoraLayer& l : adapters.layers()) {
        modules.push_back(l.module);
        conv1d = conv1d || l.layer->file_layout_in_out;
    }
    // LoraConfig's fields (peft/tuners/lora/config.py); the others keep PEFT's defaults.
    const nlohmann::json config = {{"peft_type", "LORA"},
                                   {"task_type", "CAUSAL_LM"},
                                   {"base_model_name_or_path", base_model_name_or_path},
                                   {"r", s.rank},
                                   {"lora_alpha", s.alpha},
                                   {"lora_dropout", s.dropout},
                                   {"target_modules", modules},
                                   {"bias", "none"},
                                   {"fan_in_fan_out", conv1d},
                                   {"init_lora_weights", s.init == "loftq" ? nlohmann::json("loftq") : nlohmann::json(true)},
                                   {"inference_mode", true},
                                   {"use_rslora", false},
                                   {"use_dora", false},
                                   {"modules_to_save", nullptr},
                                   {"layers_to_transform", nullptr},
                                   {"layers_pattern", nullptr},
                                   {"rank_pattern", nlohmann::json::object()},
                                   {"alpha_pattern", nlohmann::json::object()}};
    ExportFolder out(folder, force);
    out.write("adapter_config.json", config.dump(2) + "\n");
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& [name, t] : adapters.named_parameters())
        tensors.emplace_back(name, t.detach().to(at::kCPU).to(s.dtype == "bf16" ? at::kBFloat16 : at::kFloat).contiguous());
    write_safetensors(out.file("adapter_model.safetensors"), tensors, {{"format", "pt"}});
    if (!record.is_null()) out.write(kLoraRecordFile, record.dump(2) + "\n");
    out.commit();
    return out.files();
}

bool is_peft_adapter_folder(const std::string& folder) {
    std::error_code ec;
    return fs::is_regular_file(fs::path(folder) / "adapter_config.json", ec) &&
           fs::is_regular_file(fs::path(folder) / "adapter_model.safetensors", ec);
}

PeftAdapter read_peft_adapter(const std::string& folder) {
    const std::string config_path = (fs::path(folder) / "adapter_config.json").string();
    const std::string weights_path = (fs::path(folder) / "adapter_model.safetensors").string();
    if (!is_peft_adapter_folder(folder))
        throw UserError(folder + ": not a PEFT adapter folder (adapter_config.json and adapter_model.safetensors)");
    const nlohmann::json c = peft_read_json(config_path);
    PeftAdapter a;
    const auto field = [&](const char* key) -> const nlohmann::json& {
        if (!c.is_object() || !c.contains(key)) throw UserError(config_path + ": " + key + ": missing");
        return c[key];
    };
    try {
        if (field("peft_type").get<std::string>() != "LORA")
            throw UserError(config_path + ": peft_type: QuantLab reads LORA adapters, not " + c["peft_type"].dump());
        a.settings.rank = field("r").get<int64_t>();
        a.settings.alpha = field("lora_alpha").get<double>();
        a.settings.dropout = c.value("lora_dropout", 0.0);
        const nlohmann::json& t = field("target_modules");
        if (!t.is_array()) throw UserError(config_path + ": target_modules: QuantLab reads a list of module names");
        for (const auto& m : t) a.modules.push_back(m.get<std::string>());
        if (c.value("use_dora", false)) throw UserError(config_path + ": use_dora: DoRA adapters are not supported");
        if (c.value("use_rslora", false)) throw UserError(config_path + ": use_rslora: rank-stabilised scaling is not supported");
        if (c.contains("bias") && c["bias"] != "none") throw UserError(config_path + ": bias: only \"none\" is supported");
        for (const char* key : {"rank_pattern", "alpha_pattern"})
            if (c.contains(key) && !c[key].is_null() && !c[key].empty())
                throw UserError(config_path + ": " + key + ": per-layer ranks and alphas are not supported");
        if (c.contains("base_model_name_or_path") && c["base_model_name_or_path"].is_string())
            a.base_model_name_or_path = c["base_model_name_or_path"].get<std::string>();
    } catch (const nlohmann::json::exception& e) {
        throw UserError(config_path + ": " + e.what());
    }
    a.settings.targets = a.modules;
    const SafetensorsFile file = SafetensorsFile::open(weights_path);
    std::set<std::string> expected;
    for (const std::string& m : a.modules) {
        expected.insert(peft_tensor_name(m, "A"));
        expected.insert(peft_tensor_name(m, "B"));
    }
    for (const std::string& m : a.modules)
        for (const char* which : {"A", "B"}) {
            const std::string name = peft_tensor_name(m, which);
            if (!file.find(name)) throw UserError(weights_path + ": missing tensor " + name);
            at::Tensor v = load_float32(file, name, /*require_finite=*/true);
            const int64_t rank_dim = which[0] == 'A' ? 0 : 1;
            if (v.dim() != 2 || v.size(rank_dim) != a.settings.rank)
                throw UserError(weights_path + ": " + name + " has shape " + c10::str(v.sizes()) + ", expected rank " +
                                std::to_string(a.settings.rank) + " along dimension " + std::to_string(rank_dim));
            a.tensors.emplace_back(name, v);
        }
    for (const std::string& name : file.names())
        if (!expected.count(name)) throw UserError(weights_path + ": tensor " + name + " belongs to no listed target module");
    const fs::path record = fs::path(folder) / kLoraRecordFile;
    std::error_code ec;
    if (fs::is_regular_file(record, ec)) {
        a.record = peft_read_json(record.string());
        a.settings.init = a.record.value("init", std::string("default"));
        a.settings.dtype = a.record.value("adapter_dtype", std::string("fp32"));
        a.settings.seed = a.record.value("seed", uint64_t{0});
    } else {
        // A PEFT folder from elsewhere: the dtype of its tensors.
        a.settings.dtype = file.info(peft_tensor_name(a.modules.at(0), "A")).dtype == SafetensorsDtype::BF16 ? "bf16" : "fp32";
    }
    a.settings.validate();
    return a;
}

}  // namespace ql
