// SPDX-License-Identifier: GPL-3.0-or-later
// Where a decoder's attention meets its keys and values: the point at which a KV cache holds
// them (shared/design/EXPORT_LAYOUTS_2.md section 3.4: after k_proj / v_proj, K after RoPE, just
// before the attention product). KV-cache fake quantization and the online Q/K rotation hook in
// here (engine/quant/kv_cache_quantizer.h). Decoders (Llama family, Qwen2, GPT-2) have one site
// per block; encoders (BERT) and the MLP / CNN have none: they keep no KV cache.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ql {

// q [B, Hq, T, D] (after RoPE), k and v [B, Hkv, T, D] (k after RoPE), float32; a hook may
// replace any of them (the same shapes). Autograd flows through what it returns.
using AttentionHook = std::function<void(at::Tensor& q, at::Tensor& k, at::Tensor& v)>;

struct AttentionSite {
    std::string name;          // HF module name: "model.layers.0.self_attn", "transformer.h.0.attn"
    int64_t num_heads = 0;     // query heads
    int64_t num_kv_heads = 0;  // key / value heads (grouped-query attention)
    int64_t head_dim = 0;
    AttentionHook hook;        // empty: q, k, v unchanged

    void apply(at::Tensor& q, at::Tensor& k, at::Tensor& v) const {
        if (hook) hook(q, k, v);
    }
};

}  // namespace ql
