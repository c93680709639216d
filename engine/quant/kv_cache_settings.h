// SPDX-License-Identifier: GPL-3.0-or-later
// KV-cache quantization as a recipe's `kv_cache` section says it (docs/RECIPES.md "KV cache"):
// the format of the keys and values a decoder's attention caches, quantized after RoPE (K) and
// before the attention product (shared/design/EXPORT_LAYOUTS_2.md section 3). Model Optimizer's
// names where it has them: its KV presets (modelopt_recipes/configs/ptq/presets/kv/*.yaml, the
// values of hf_ptq.py --kv_cache_qformat: fp8, fp8_cast, nvfp4, nvfp4_cast, nvfp4_rotate) and
// its quantizer fields use_constant_amax and rotate. Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

struct KvCacheSettings {
    bool enabled = false;
    std::string format;               // fp8_e4m3 | fp8_e5m2 | nvfp4 | int2..int8
    // Scales: "tensor" (one static amax per layer for K and one for V: Model Optimizer's axis
    // null), "head" (one static amax per KV head: vLLM's [num_kv_heads] k_scale), "group"
    // (integer formats: dynamic symmetric scales per group of group_size along head_dim, per
    // token). NVFP4 always has dynamic E4M3 scales per 16 along head_dim; tensor / head says
    // where its calibrated global amax comes from.
    std::string granularity = "tensor";
    int64_t group_size = 0;           // group: 0 = head_dim
    // Model Optimizer use_constant_amax: amax = 448 (the E4M3 maximum) and no calibration; FP8
    // then is a plain cast (scale 1), NVFP4 a global scale of 448 / (6 * 448).
    bool use_constant_amax = false;
    // Model Optimizer kv nvfp4_rotate (rotate: true on q_bmm and k_bmm): a Hadamard transform of
    // Q and K over head_dim before K is quantized (scores unchanged: (qH)(kH)^T = q k^T).
    bool rotate = false;
    std::vector<std::string> exclude;  // attention module globs whose cache stays in 16 bits

    // "nvfp4 (global amax per tensor)", "fp8_e4m3 per head", "off" ...
    std::string describe() const;
    // Stored bits per cached element with its scales (16 for a BF16 / FP16 cache when off):
    // FP8 8 and INT b with static scales (per layer / head: negligible per token), NVFP4 4 + 8/16
    // (one E4M3 per 16), INT b groups of g with dynamic scales b + 16/g (one FP16 scale per group,
    // the convention of grouped integer KV caches; no Model Optimizer layout exists for them).
    double bits_per_element(int64_t head_dim) const;
};

// Model Optimizer's --kv_cache_qformat names plus QuantLab's: fp8 (= fp8_e4m3), fp8_cast,
// fp8_head, nvfp4, nvfp4_cast, nvfp4_rotate, int8, int8_head, int4 (groups along head_dim),
// none. UserError listing the names for anything else.
KvCacheSettings kv_cache_preset(const std::string& name);
std::vector<std::string> kv_cache_preset_names();

}  // namespace ql
