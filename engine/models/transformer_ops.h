// SPDX-License-Identifier: GPL-3.0-or-later
// The building blocks of the transformer models, as ATen operators (autograd works through
// them), each written to match its transformers counterpart (named below) in float32.
#pragma once

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>

#include <string>

#include "engine/models/model_config.h"

namespace ql {

// LayerNorm / RMSNorm parameters: weight [dim], bias [dim] or undefined.
struct NormParams {
    at::Tensor weight;
    at::Tensor bias;
};

// torch.nn.LayerNorm over the last dimension.
at::Tensor layer_norm(const at::Tensor& x, const NormParams& norm, double eps);
// LlamaRMSNorm: x / sqrt(mean(x^2) + eps) in float32, then weight * normalized.
at::Tensor rms_norm(const at::Tensor& x, const NormParams& norm, double eps);
// Gemma3RMSNorm: the same normalisation in float32, then normalized * (1 + weight) (weights are
// stored as offsets from 1).
at::Tensor gemma_rms_norm(const at::Tensor& x, const NormParams& norm, double eps);

// transformers ACT2FN: gelu (exact erf), gelu_new and gelu_pytorch_tanh (tanh approximation),
// silu / swish, relu.
at::Tensor activate(const at::Tensor& x, const std::string& activation);

// RoPE tables for positions start..start+T-1: cos, sin [T, head_dim] float32, rotate_half layout
// (the two halves of a head hold the same frequencies), from inv_freq computed in float32 exactly
// as transformers' compute_default_rope_parameters / linear / llama3 variants.
struct RopeTables {
    at::Tensor cos, sin;
};
at::Tensor rope_inverse_frequencies(const ModelConfig& config);  // [head_dim / 2] float32, CPU
RopeTables rope_tables(const ModelConfig& config, int64_t seq_len, at::Device device = at::kCPU, int64_t start = 0);
// x [B, H, T, D] -> x * cos + rotate_half(x) * sin (transformers apply_rotary_pos_emb).
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope);

// Which keys each query may see: bool [T, past + T], true = visible, for queries at positions
// past..past+T-1 (past = tokens already in a KV cache) and keys at 0..past+T-1. Causal: j <= i;
// with a sliding window w > 0 also j > i - w (transformers masking_utils sliding_window_overlay).
at::Tensor causal_visibility(int64_t seq_len, int64_t sliding_window, const at::TensorOptions& device, int64_t past = 0);

// Scaled dot-product attention as transformers' eager_attention_forward:
// softmax(q k^T * scale, masked) v in float32. q [B, Hq, T, D], k and v [B, Hkv, T, D] with
// Hq % Hkv == 0 (grouped-query attention: query head h uses kv head h / (Hq / Hkv), i.e.
// repeat_kv). `visible` is bool, broadcastable to [B, Hq, T, T]; hidden scores are set to the
// lowest float (transformers' finfo.min), not -inf, so a fully hidden row gives a uniform
// average like HF instead of NaN. Returns [B, T, Hq * D]. softcap > 0 (Gemma's
// attn_logit_softcapping): scores become softcap * tanh(scores / softcap) before the mask, as
// transformers' Gemma eager_attention_forward does.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& visible,
                     double scale, double softcap = 0);

// [B, T, H * D] -> [B, H, T, D]
at::Tensor split_heads(const at::Tensor& x, int64_t heads, int64_t head_dim);

// Token ids: int64 [B, T], every id in [0, vocab), T in [1, max_positions] when max_positions > 0.
// Throws UserError naming `what`.
void check_token_ids(const at::Tensor& ids, int64_t vocab_size, int64_t max_positions, const std::string& what);

}  // namespace ql
