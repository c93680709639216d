// SPDX-License-Identifier: GPL-3.0-or-later
// A ModelConfig as an HF config.json (the inverse of read_hf_config for llama, qwen2 and gpt2):
// what a model opened from a GGUF file writes next to its weights when a command saves it
// (ptq / train checkpoints), so that the folder loads in QuantLab and in transformers.
#pragma once

#include <optional>
#include <string>

#include "engine/models/model_config.h"

namespace ql {

// UserError for architectures without a config.json form here (bert, mlp, cnn). The special
// token ids are written when given.
std::string hf_config_json(const ModelConfig& config, std::optional<int32_t> bos_id = std::nullopt,
                           std::optional<int32_t> eos_id = std::nullopt);

}  // namespace ql
