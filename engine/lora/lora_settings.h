// SPDX-License-Identifier: GPL-3.0-or-later
// What a LoRA adapter is (docs/TRAINING.md "LoRA and QLoRA"): rank r, alpha, dropout, the layers
// it targets, how it starts and how its weights are stored. Names and defaults follow PEFT's
// LoraConfig (peft/tuners/lora/config.py), so that the same numbers mean the same adapter there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

class Model;
struct QuantizableLayer;

struct LoraSettings {
    int64_t rank = 8;           // r
    double alpha = 16;          // lora_alpha: the update is scaled by alpha / r
    double dropout = 0.0;       // lora_dropout: on the layer's input, training only
    // Layer name patterns: a glob ('*', '?') matches the whole module name ("*mlp*"); a plain name
    // matches a module equal to it or ending in "." + it, as PEFT's target_modules list does
    // ("q_proj"). "all-linear" (the default): every Linear layer but the output head, as PEFT's
    // "all-linear".
    std::vector<std::string> targets = {"all-linear"};
    std::string init = "default";  // default (PEFT: A Kaiming-uniform, B = 0) | loftq
    int64_t loftq_iterations = 1;  // loftq: alternations of quantization and SVD (PEFT's loftq_iter)
    std::string dtype = "fp32";    // adapter storage: fp32 | bf16 (values rounded to bfloat16 after every step)
    uint64_t seed = 0;             // the default init's draws and dropout's masks

    double scaling() const { return alpha / static_cast<double>(rank); }
    // UserError naming the setting for values out of range or unknown words.
    void validate() const;
};

// "q_proj,v_proj" -> {"q_proj", "v_proj"} (whitespace trimmed, empties dropped).
std::vector<std::string> parse_lora_targets(const std::string& comma_separated);

// Whether `module` (an HF module name) is targeted by `targets` (LoraSettings::targets rules);
// `is_head` tells the output layer (excluded by "all-linear").
bool lora_target_matches(const std::vector<std::string>& targets, const std::string& module, bool is_head);

// The Linear layers of `model` that `settings` targets, in forward order; UserError when a
// pattern matches no Linear layer, or nothing is targeted.
std::vector<std::string> resolve_lora_targets(const Model& model, const LoraSettings& settings);

}  // namespace ql
