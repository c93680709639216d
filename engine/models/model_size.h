// SPDX-License-Identifier: GPL-3.0-or-later
// How many parameters a model config describes, counted from its sizes before any tensor is
// allocated (the same tensors engine/models registers; tied weights once), with overflow-checked
// arithmetic, so that a config.json asking for more than the machine holds is refused up front
// (engine/core/allocation_limit.h). Plain C++.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/models/model_config.h"

namespace ql {

// Parameters of the model `config` describes (Model::parameter_count() of the built model), or
// nullopt when the count does not fit 64 bits. The config must have passed validate_model_config.
std::optional<uint64_t> model_parameter_count(const ModelConfig& config);

// Throws UserError when the model's float32 parameters would need more than the machine's
// memory: "<source>: key '<key>' = <value>: the model's N parameters (<every size>) as float32
// would need <bytes>, more than this machine's memory (<bytes>)", blaming the size furthest beyond
// what published models use, or "<source>: the model's sizes: ..." when none is (a real model too
// large for this machine). Key names are config.json's for the model type (n_embd for GPT-2,
// hidden_size for Llama and BERT, ...).
// `bytes_per_parameter`: 4 (float32, what create_model allocates) or the checkpoint's element size
// (2 for config.json's torch_dtype bfloat16 / float16: what a model opened as stored maps).
void require_model_fits_memory(const ModelConfig& config, const std::string& source, int bytes_per_parameter = 4);

// Bytes per parameter of config.json's dtype ("bfloat16", "float16" -> 2, "float64" -> 8), 4
// otherwise (float32 or absent).
int config_dtype_bytes(const ModelConfig& config);

}  // namespace ql
