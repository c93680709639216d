// SPDX-License-Identifier: GPL-3.0-or-later
// Sibling Linear layers that inference engines fuse into one matmul when they load a checkpoint:
// q/k/v projections (vLLM QKVParallelLinear "qkv_proj"), gate/up (MergedColumnParallelLinear
// "gate_up_proj"), BERT's query/key/value, Mixtral-style w1/w3 and DeepSeek's q_a_proj /
// kv_a_proj_with_mqa (llm-compressor src/llmcompressor/observers/helpers.py FUSED_LAYER_NAMES).
// A fused matmul has one per-tensor scale for all its shards: vLLM keeps the largest NVFP4
// global scale and the largest FP8 input scale across the shards (and requantizes per-tensor
// FP8 weights to the largest weight scale), so shards quantized with different per-tensor
// scales load with other numbers than QuantLab evaluated (shared/design/EXPORT_LAYOUTS_2.md 1.4).
#pragma once

#include <string>
#include <vector>

namespace ql {

class Model;

// Groups of at least two layer names with the same parent module whose last components form one
// of the fused sets above, each in the set's order ("...q_proj", "...k_proj", "...v_proj"), in the
// order of their first member in `linear_names`.
std::vector<std::vector<std::string>> fused_layer_groups(const std::vector<std::string>& linear_names);
// The same for the model's Linear layers.
std::vector<std::vector<std::string>> fused_layer_groups(const Model& model);

}  // namespace ql
