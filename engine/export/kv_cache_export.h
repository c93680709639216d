// SPDX-License-Identifier: GPL-3.0-or-later
// A quantized KV cache in Model Optimizer's unified HF checkpoint (shared/design/
// EXPORT_LAYOUTS_2.md section 3.1): per attention layer `<attn>.k_proj.k_scale` and
// `<attn>.v_proj.v_scale` (float32; Model Optimizer quant_utils.py _KV_CACHE_REPLACEMENTS maps
// k_bmm_quantizer._amax there), value amax / 448 for FP8 and NVFP4 alike, a scalar per layer, or
// [num_kv_heads] for per-head scales (vLLM's per-head k_scale); `kv_cache_quant_algo` "FP8" /
// "NVFP4" / "INT8" (quant_utils.py _compute_kv_cache_dtype) and the config.json mirror
// `kv_cache_scheme` (convert_hf_config.py: FP8 {"dynamic": false, "num_bits": 8, "type":
// "float"}, otherwise the bare name). Layouts with no Model Optimizer counterpart are refused.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/export/hf_modelopt_layout.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/quant/quantized_model.h"

namespace ql {

struct KvCacheExport {
    std::string quant_algo;              // "" = the KV cache is not quantized
    std::vector<ExportTensor> tensors;   // k_scale / v_scale per quantized attention
    std::vector<std::string> warnings;
};

// UserError (naming the attention and the setting) for a KV cache the layout cannot describe:
// dynamic integer groups, a model whose attention has no k_proj / v_proj (GPT-2's fused c_attn),
// uncalibrated static scales.
KvCacheExport hf_modelopt_kv_cache(const QuantizedModel& q);

// Reading such a checkpoint back (hf_modelopt_checkpoint.h): the recipe section its
// kv_cache_quant_algo and scale shapes describe (attentions without scales excluded), the amax
// per attention that reproduces each stored scale exactly in float32, and the tensor names read.
struct KvCacheImport {
    KvCacheSettings settings;                                       // enabled = false for algo ""
    std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> amax;  // attention -> (K, V)
    std::set<std::string> tensors;
};

// `algo`: the config's kv_cache_quant_algo ("" = none). UserError naming `where` and the tensor
// for an unknown algorithm, a missing v_scale, a scale of the wrong dtype / shape or a
// non-finite / negative one.
KvCacheImport read_hf_modelopt_kv_cache(const SafetensorsCheckpoint& checkpoint, const std::string& algo, const Model& model,
                                        const std::string& where);

}  // namespace ql
