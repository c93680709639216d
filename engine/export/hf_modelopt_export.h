// SPDX-License-Identifier: GPL-3.0-or-later
// Writes a quantized model as NVIDIA Model Optimizer's unified HF checkpoint ("hf-modelopt",
// shared/design/EXPORT.md section 1; layouts in hf_modelopt_layout.h): real packed low-bit
// weights with their scales under the HF tensor names, every other parameter as the model holds
// it (float32), hf_quant_config.json, config.json with `quantization_config` (llm-compressor
// style, as modelopt/torch/export/convert_hf_config.py writes it), and the source folder's
// tokenizer / generation files. vLLM (quantization=modelopt) and TensorRT-LLM read this layout;
// QuantLab reads it back (hf_modelopt_checkpoint.h) with outputs identical to the in-memory model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/export/export_folder.h"
#include "engine/export/export_validator.h"
#include "engine/jobs/job.h"
#include "engine/quant/kv_cache_scales.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct FolderExportResult {
    std::vector<std::string> files;  // final paths, sorted
    int64_t bytes = 0;
    std::vector<std::string> warnings;
};

// A model whose function needs runtime rotations (online Hadamards: engine/quant/plain_weights.h)
// is refused with a UserError pointing to the fakequant export. A quantized KV cache adds
// k_scale / v_scale and kv_cache_quant_algo (engine/export/kv_cache_export.h).
// Every layer with an enabled weight quantizer is exported in its Model Optimizer format
// (UserError listing the supported ones otherwise); Linear layers without one are listed in
// exclude_modules. Several formats: quant_algo MIXED_PRECISION with quantized_layers. The export
// is validated (export_validator.h) before anything is written; the folder is written via
// "<out>.partial" and a rename (export_folder.h). `source_folder` provides config.json and the
// files copied unchanged. Calibrated KV-cache scales (QuantizedModel::kv_cache_scales()) are
// written as <attention>.k_proj.k_scale / .v_proj.v_scale (F32 scalars, amax / 448) with
// kv_cache_quant_algo FP8 | NVFP4 (modelopt quant_utils.py _KV_CACHE_REPLACEMENTS). Also writes
// quantlab_export.json (export_manifest.h). `before_commit` sees the complete partial folder (the
// Export Doctor). Progress phases "pack", "write".
FolderExportResult export_hf_modelopt(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                      bool force, JobSink& sink, const CancellationToken& cancel,
                                      const FolderCheck& before_commit = {});

// The two JSON documents for a set of quantized layers and the excluded (high-precision) ones;
// kv_cache_quant_algo "FP8" / "NVFP4" / "INT8" or "" (null: no KV-cache quantization).
std::string hf_quant_config_json(const std::vector<HfExportLayer>& layers, const std::vector<std::string>& excluded,
                                 const std::string& kv_cache_quant_algo = "");
// `config_json` (the model's config.json) with "quantization_config" added.
std::string hf_config_with_quantization(const std::string& config_json, const std::vector<HfExportLayer>& layers,
                                        const std::vector<std::string>& excluded, const std::string& where,
                                        const std::string& kv_cache_quant_algo = "");

}  // namespace ql
