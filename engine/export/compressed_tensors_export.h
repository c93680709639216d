// SPDX-License-Identifier: GPL-3.0-or-later
// Writes a quantized model as a compressed-tensors checkpoint ("compressed-tensors": the layout
// vLLM and llm-compressor use natively; shared/design/EXPORT_LAYOUTS_2.md section 1; per-layer
// tensors in compressed_tensors_layout.h): model*.safetensors with every quantized Linear in its
// compression format and every other parameter as the model holds it (float32), config.json with
// `quantization_config` (quant_method "compressed-tensors", one config group per distinct scheme,
// `ignore` for the Linear layers left in high precision, `kv_cache_scheme` with per-attention
// `k_scale` / `v_scale` when the recipe calibrated KV-cache scales), quantlab_export.json
// (export_manifest.h) and the source folder's tokenizer / generation files. The
// quantization_config holds only keys compressed-tensors 0.20 knows (its QuantizationScheme and
// QuantizationArgs forbid unknown ones, QuantizationConfig drops them); it is written with sorted
// keys as compressed-tensors writes it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/export/compressed_tensors_layout.h"
#include "engine/export/export_folder.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/jobs/job.h"
#include "engine/quant/kv_cache_scales.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct CtExportLayer {
    std::string layer;
    CtScheme scheme;
    int64_t out = 0, in = 0;
};

// Every layer with an enabled weight quantizer is exported in its scheme (UserError naming the
// layer and the format otherwise, before anything is written); Linear layers without one go to
// `ignore`. `before_commit` sees the complete partial folder (the Export Doctor). Progress
// phases "pack", "write".
FolderExportResult export_compressed_tensors(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                             bool force, JobSink& sink, const CancellationToken& cancel,
                                             const FolderCheck& before_commit = {});

// `config_json` (the model's config.json) with "quantization_config" added.
std::string ct_config_with_quantization(const std::string& config_json, const std::vector<CtExportLayer>& layers,
                                        const std::vector<std::string>& excluded, const std::optional<KvCacheScales>& kv,
                                        const std::string& where);

// A recipe's per-layer plan as compressed-tensors' quantization_config for the model `q` wraps:
// the config_groups (one per distinct scheme, `targets` the module names) and `ignore` list
// export_compressed_tensors writes into config.json, without calibrating or packing (schemes
// only). UserError as the export for a layer without a compressed-tensors scheme.
nlohmann::json ct_plan_quantization_config(const QuantizedModel& q);
// The per-layer schemes a quantization_config's config_groups give (the round trip of the
// above; UserError naming `where` for a malformed group or a module in two groups).
std::map<std::string, CtScheme> ct_layer_schemes(const nlohmann::json& quantization_config, const std::string& where);

// QuantizationArgs as compressed-tensors serialises them (null fields omitted), and back (the
// doctor): UserError naming `where` for unknown keys or values, as compressed-tensors'
// extra="forbid" pydantic models refuse them.
nlohmann::json ct_args_to_json(const CtArgs& a);
CtArgs ct_args_from_json(const nlohmann::json& j, const std::string& where);
// The keys QuantizationArgs accepts (compressed-tensors 0.20 QuantizationArgs.model_fields; the
// model is extra="forbid", as QuantizationScheme is, while QuantizationConfig is extra="ignore").
const std::set<std::string>& ct_args_keys();

}  // namespace ql
