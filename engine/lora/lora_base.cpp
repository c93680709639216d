// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/lora_base.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <filesystem>

#include "engine/core/compute_device.h"
#include "engine/core/errors.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/models/model_device.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"

namespace ql {
namespace fs = std::filesystem;

const char* const kQloraRecipe = R"({
  "name": "QLORA_NF4_DQ",
  "description": "QLoRA's base: NF4 blocks of 64 with double quantization on every Linear layer but the output head.",
  "algorithm": "max",
  "quant_cfg": [
    {"quantizer_name": "*", "enable": false},
    {"quantizer_name": "*weight_quantizer", "cfg": {"format": "nf4", "double_quant": true}},
    {"quantizer_name": "*lm_head*", "enable": false}
  ]
})";

const char* const kFullPrecisionRecipe = R"({
  "name": "FULL_PRECISION",
  "description": "No quantization: a full-precision base.",
  "quant_cfg": [{"quantizer_name": "*", "enable": false}]
})";

nlohmann::json lora_base_source_json(const LoraBaseSource& s) {
    return {{"model", s.model},
            {"recipe", s.recipe.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(s.recipe)},
            {"calibration", s.calibration},
            {"calibration_samples", s.calibration_samples},
            {"seq_len", s.sequence_length},
            {"seed", s.seed},
            {"loftq_weights", s.loftq_weights}};
}

LoraBaseSource lora_base_source_from_json(const nlohmann::json& j, const std::string& folder, const std::string& source) {
    LoraBaseSource s;
    try {
        s.model = j.at("model").get<std::string>();
        if (!j.at("recipe").is_null()) s.recipe = j.at("recipe").dump();
        s.calibration = j.value("calibration", std::string());
        s.calibration_samples = j.value("calibration_samples", int64_t{0});
        s.sequence_length = j.value("seq_len", int64_t{0});
        s.seed = j.value("seed", uint64_t{0});
        s.loftq_weights = j.value("loftq_weights", std::string());
    } catch (const nlohmann::json::exception& e) {
        throw UserError(source + ": base: " + e.what());
    }
    if (!s.loftq_weights.empty() && fs::path(s.loftq_weights).is_relative())
        s.loftq_weights = (fs::path(folder) / s.loftq_weights).string();
    return s;
}

bool lora_recipe_needs_calibration(const QuantizedModel& q) {
    const Recipe& r = q.recipe();
    if (r.algorithm.method != "max" || !r.imatrix.empty()) return true;
    for (const auto& l : q.layers())
        if (l->input_configured() || (l->weight_configured() && l->plan().weight.calibrator != "max")) return true;
    for (const auto& kv : q.kv_caches())
        if (kv->configured()) return true;
    return false;
}

LoraBase open_lora_base(const LoraBaseSource& s, const std::string& device, const CancellationToken& cancel,
                        WeightStorage storage) {
    // LoftQ's base weights are float32 values off the model's grid: written into BF16 weights
    // opened as stored they would be rounded (and the base quantized from other values).
    if (!s.loftq_weights.empty()) storage = WeightStorage::Float32Copy;
    LoraBase b;
    b.opened = open_model(s.model, storage);
    move_opened_model(b.opened, torch_device(device));
    if (b.opened.quantization) {
        if (!s.recipe.empty())
            throw UserError("lora: " + b.opened.path + " is already quantized with its own recipe; drop --recipe");
        b.quantized = b.opened.quantization.get();
    } else {
        const Recipe recipe = parse_recipe(s.recipe.empty() ? kFullPrecisionRecipe : s.recipe, "the base's recipe");
        b.own = std::make_unique<QuantizedModel>(*b.opened.model, recipe);
        b.quantized = b.own.get();
        if (lora_recipe_needs_calibration(*b.quantized)) {
            if (s.calibration.empty()) throw UserError("lora: the recipe " + recipe.name + " needs calibration data (--calib or --data)");
            DataOptions co;
            co.split = DataSplit::Train;
            co.samples = s.calibration_samples > 0 ? s.calibration_samples : recipe.calibration.samples;
            co.seed = s.seed;
            co.sequence_length = s.sequence_length;
            const Dataset calibration = load_calibration_dataset(s.calibration, co, b.opened.data);
            PtqOptions po;
            po.batch_size = recipe.calibration.batch_size;
            NullJobSink quiet;
            run_ptq_pipeline(*b.quantized, calibration, po, quiet, cancel);
            b.calibrated = true;
        }
    }
    if (!s.loftq_weights.empty()) {
        c10::NoGradGuard no_grad;
        const SafetensorsFile f = SafetensorsFile::open(s.loftq_weights);
        for (const std::string& name : f.names()) {
            const std::string module = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0
                                           ? name.substr(0, name.size() - 7)
                                           : name;
            auto* layer = dynamic_cast<LinearLayer*>(b.opened.model->find_layer(module));
            if (!layer) throw UserError(s.loftq_weights + ": " + name + " is no Linear layer's weight of " + b.opened.path);
            const at::Tensor w = load_float32(f, name, /*require_finite=*/true);
            if (w.sizes() != layer->weight.sizes())
                throw UserError(s.loftq_weights + ": " + name + " has shape " + c10::str(w.sizes()) + ", the layer " +
                                c10::str(layer->weight.sizes()));
            layer->weight.copy_(w.to(layer->weight.device()));
        }
    }
    b.quantized->set_enabled(true);
    return b;
}

}  // namespace ql
