// SPDX-License-Identifier: GPL-3.0-or-later
// KV-cache scales for the exports: per attention module, the calibrated amax of K and V and the
// per-tensor scale deployment engines read (shared/design/EXPORT_LAYOUTS_2.md section 3):
//   k_scale = k_amax / 448, v_scale = v_amax / 448, float32, for FP8 E4M3 and for NVFP4 (where
//   it is the per-tensor global scale above dynamic E4M3 block scales), as Model Optimizer
//   exports its k/v_bmm_quantizer amax (modelopt/torch/export/quant_utils.py) and
//   compressed-tensors' tensor-strategy float8 kv_cache_scheme stores them.
// The amax comes from the KV-cache quantizers (kv_cache_quantizer.h: K after RoPE, V, calibrated
// by max; QuantizedModel::kv_cache_scales()).
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace ql {

class Model;

struct KvLayerScales {
    std::string attention;       // "model.layers.0.self_attn"
    std::string k_proj, v_proj;  // the Linear layers whose outputs are K and V
    float k_amax = std::nanf(""), v_amax = std::nanf("");
};

struct KvCacheScales {
    std::string format;  // fp8_e4m3 | nvfp4
    std::vector<KvLayerScales> layers;
};

// amax / 448 (FP8 E4M3's largest value), for both formats.
float kv_scale_of(float amax);
// The amax whose kv_scale_of is `scale` exactly (readers of exported scales); UserError naming
// `where` for negative, non-finite or unreachable scales.
float kv_amax_for_scale(float scale, const std::string& where);

// Model Optimizer's kv_cache_quant_algo for a KV format: "FP8" | "NVFP4".
std::string modelopt_kv_cache_algo(const std::string& format);

// The attention modules of a Llama / Mistral / Qwen2 decoder (and the demo) with their K and V
// projections, amax unset; UserError naming the architecture for models without a KV cache
// (BERT, MLP, CNN) or whose K/V come from a fused projection (GPT-2 c_attn).
std::vector<KvLayerScales> kv_cache_layers(const Model& model);

// quantlab_kv_cache.json (QuantLab checkpoints): {"format": ..., "layers": [{"attention", "k_proj",
// "v_proj", "k_amax", "v_amax"}]}; floats round-trip exactly. UserError naming `where` and the field.
std::string kv_cache_scales_json(const KvCacheScales& s);
KvCacheScales parse_kv_cache_scales(const std::string& text, const std::string& where);

}  // namespace ql
