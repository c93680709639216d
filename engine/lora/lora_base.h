// SPDX-License-Identifier: GPL-3.0-or-later
// The frozen base of a LoRA run, made again from what the adapter records (quantlab_lora.json
// "base"): the model, the recipe that quantized it, the calibration that PTQ read, and for LoftQ
// the base weights LoftQ chose. Every command that uses an adapter (training and its resume,
// export, the merge preview, the Export Doctor) opens the base through here, and checks it
// against the recorded fingerprint (base_fingerprint.h).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/jobs/job.h"
#include "engine/loading/model_source.h"

namespace ql {

// QLoRA's base (Dettmers et al. 2023; transformers' BitsAndBytesConfig(load_in_4bit=True,
// bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)): NF4 in blocks of 64 with double
// quantization on every Linear layer but the output head (transformers keeps lm_head in high
// precision), round to nearest.
extern const char* const kQloraRecipe;
// A full-precision base: every quantizer off.
extern const char* const kFullPrecisionRecipe;

struct LoraBaseSource {
    std::string model;               // as given (HF folder, GGUF file, "demo", or a quantized checkpoint)
    std::string recipe;              // recipe JSON text; "" for a quantized checkpoint (its own)
    std::string calibration;         // PTQ calibration data ("" = none needed: weight-only max recipes)
    int64_t calibration_samples = 0; // 0 = the recipe's
    int64_t sequence_length = 0;
    uint64_t seed = 0;
    std::string loftq_weights;       // LoftQ: safetensors of the adapted layers' base weights ("" = none)
};

nlohmann::json lora_base_source_json(const LoraBaseSource& s);
// `folder` resolves a relative loftq_weights path. UserError naming `source` for bad JSON.
LoraBaseSource lora_base_source_from_json(const nlohmann::json& j, const std::string& folder, const std::string& source);

struct LoraBase {
    OpenedModel opened;
    std::unique_ptr<QuantizedModel> own;  // when the recipe is ours (not a checkpoint's)
    QuantizedModel* quantized = nullptr;  // the base's quantizers, weights on
    bool calibrated = false;              // PTQ ran on calibration data
    Model& model() const { return *opened.model; }
};

// Opens the model, installs and calibrates the recipe (PTQ when it needs data: input quantizers,
// KV cache, SmoothQuant / AWQ / GPTQ, an imatrix; a weight-only max recipe needs none) on
// `device`, loads LoftQ weights, and switches the quantizers on. UserError for bad input.
// `storage`: AsStored for a frozen base (adapters train beside it); Float32Copy where the base's
// own weights are trained (full fine-tuning) or LoftQ writes them (a source with loftq_weights
// always opens Float32Copy: its float32 values would be rounded in BF16 weights).
LoraBase open_lora_base(const LoraBaseSource& source, const std::string& device, const CancellationToken& cancel,
                        WeightStorage storage = WeightStorage::AsStored);

// Whether a recipe needs calibration data.
bool lora_recipe_needs_calibration(const QuantizedModel& q);

}  // namespace ql
