// SPDX-License-Identifier: GPL-3.0-or-later
// The QuantLab quantized checkpoint: what `quantlab-cli ptq` writes and every command that takes
// MODEL reads back into the same quantized model, bit for bit (docs/RECIPES.md "Checkpoint").
// An HF model folder plus:
//   model.safetensors            the weights the quantizers read (after smoothing / AWQ
//                                scaling; GPTQ layers: the weight before GPTQ), float32, HF names
//   quantlab_quant.safetensors   per quantized layer L: L.weight_quantized (F32, the weight as the
//                                quantized forward uses it, on the format's grid), L.weight_scale
//                                (F32 decoded scales: per tensor / channel / group / block),
//                                L.weight_global_scale (NVFP4), L.input_amax (F32 scalar, static
//                                input quantizers), L.pre_quant_scale (F32 [in], x * s)
//   quantlab_recipe.json         the recipe
//   quantlab_kv_cache.json       calibrated K / V amax per attention (recipes with "kv_cache";
//                                engine/quant/kv_cache_scales.h), absent otherwise
//   quantlab_quant.json          per-layer settings and switches; written last (complete marker)
// plus the source folder's other files (config.json, tokenizer files, quantlab.json).
#pragma once

#include <memory>
#include <string>

#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

constexpr const char* kQuantStateFile = "quantlab_quant.json";

// Writes `out_folder` via "<out_folder>.partial" and a rename; an existing folder is replaced
// only with `force` (UserError otherwise). `source_folder` provides the files copied unchanged.
// `extra_files` (name -> contents) are written into the folder too (reports).
void save_quantized_checkpoint(const QuantizedModel& quantized, const std::string& source_folder,
                               const std::string& out_folder, bool force,
                               const std::vector<std::pair<std::string, std::string>>& extra_files = {});

bool is_quantized_checkpoint(const std::string& folder);

// For a folder written by save_quantized_checkpoint: the recipe's quantizers installed into
// `model` (loaded from the same folder) with the saved state; nullptr for other folders.
// Missing, extra or mis-shaped tensors and malformed JSON are UserErrors naming file and field.
std::unique_ptr<QuantizedModel> load_quantization(Model& model, const std::string& folder);

}  // namespace ql
