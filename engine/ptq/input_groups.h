// SPDX-License-Identifier: GPL-3.0-or-later
// Linear layers that read the same input, and the normalisation that produces it when that
// norm's output feeds nothing else (so a per-channel 1/s can be folded into its weight and bias,
// SmoothQuant's smooth_ln_fcs). Llama/Mistral/Qwen2: input_layernorm -> q, k, v;
// post_attention_layernorm -> gate, up. GPT-2: ln_1 -> c_attn; ln_2 -> c_fc. BERT is post-norm
// (each LayerNorm output is also the residual), so its q, k, v share an input but no foldable
// norm. Every other layer is a group of its own without a norm.
#pragma once

#include <string>
#include <vector>

#include "engine/models/model.h"

namespace ql {

struct InputGroup {
    std::string norm;                 // norm module name ("model.layers.0.input_layernorm"), "" = none
    std::vector<std::string> layers;  // layer names, in forward order
};

// Groups covering the given layers (each once), in forward order of their first layer. A group
// with a norm also holds the norm's other readers, given or not: folding changes all their inputs.
std::vector<InputGroup> input_groups(const Model& model, const std::vector<std::string>& layers);

}  // namespace ql
