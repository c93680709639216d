// SPDX-License-Identifier: GPL-3.0-or-later
// A LoRA adapter as PEFT saves and loads it (peft/utils/save_and_load.py, PeftModel.from_pretrained):
//   adapter_config.json          LoraConfig: peft_type LORA, r, lora_alpha, lora_dropout,
//                                target_modules (the adapted modules' full names, which PEFT
//                                matches exactly), fan_in_fan_out (GPT-2 Conv1D), bias "none" ...
//   adapter_model.safetensors    base_model.model.<module>.lora_A.weight [r, in] and .lora_B.weight
//                                [out, r], F32 or BF16 (the adapter dtype)
//   quantlab_lora.json           QuantLab's own record (PEFT ignores it): the base the adapter was
//                                trained on (model, recipe, calibration, fingerprint), the init,
//                                the adapter dtype and seed
// PEFT loads the folder onto transformers' model of the base (a bitsandbytes NF4 base for QLoRA)
// and computes what QuantLab computes (tests/app/cli_lora_peer_test.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/lora/lora_adapters.h"

namespace ql {

constexpr const char* kLoraRecordFile = "quantlab_lora.json";

// Writes the folder through "<folder>.partial" and a rename (engine/export/export_folder.h);
// an existing folder only with `force`. `record` becomes quantlab_lora.json (null: none).
// Returns the files written.
std::vector<std::string> write_peft_adapter(const std::string& folder, const LoraAdapters& adapters,
                                            const std::string& base_model_name_or_path, const nlohmann::json& record,
                                            bool force);

struct PeftAdapter {
    LoraSettings settings;                 // r, alpha, dropout, targets = the module list; init from the record
    std::vector<std::string> modules;      // target_modules as written
    std::vector<std::pair<std::string, at::Tensor>> tensors;  // float32 copies, file names
    nlohmann::json record;                 // quantlab_lora.json, null when absent
    std::string base_model_name_or_path;
};

// UserError naming the file and field for a missing or malformed file, a non-LoRA peft_type,
// options QuantLab does not implement (DoRA, rsLoRA, bias other than "none", rank / alpha
// patterns), tensors that are not pairs of the listed modules or have the wrong rank.
PeftAdapter read_peft_adapter(const std::string& folder);

bool is_peft_adapter_folder(const std::string& folder);

}  // namespace ql
