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

}  // namespace ql
