// SPDX-License-Identifier: GPL-3.0-or-later
// Llama-family decoders as transformers' LlamaForCausalLM (also Mistral with its sliding
// window, TinyLlama, SmolLM, Llama 2/3 and the built-in demo decoder), Qwen2ForCausalLM (q/k/v
// biases) and Qwen3ForCausalLM (q_norm / k_norm: an RMSNorm of every query and key head before
// RoPE): RMSNorm, RoPE (rotate_half; default, linear and llama3 scaling), SwiGLU MLP,
// grouped-query attention, tied or untied lm_head.
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class LlamaModel : public Model {
public:
    explicit LlamaModel(ModelConfig config);

    // input_ids [B, T] int64 -> logits [B, T, vocab] float32.
    at::Tensor forward(const at::Tensor& input_ids) override;
    at::Tensor forward_cached(const at::Tensor& input_ids, KvCache& cache, bool last_only = false) override;
    bool generates_text() const override { return true; }
    // The final-norm hidden state [B, T, hidden] (before lm_head); with a cache, of the tokens
    // after the cached ones (forward_cached).
    at::Tensor hidden_states(const at::Tensor& input_ids, KvCache* cache = nullptr);

    int64_t block_count() const override { return static_cast<int64_t>(blocks_.size()); }
    at::Tensor embed(const at::Tensor& input_ids) override;
    at::Tensor run_block(int64_t block, const at::Tensor& hidden) override;
    at::Tensor head(const at::Tensor& hidden) override;

    bool ignorable(const std::string& name) const override;

private:
    struct Block {
        NormParams input_layernorm, post_attention_layernorm;
        LinearLayer q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
        NormParams q_norm, k_norm;  // Qwen3 only
        AttentionSite attention;
    };
    // Block `i` on x [B, T, hidden] at positions past..past+T-1 (rope and visible for those).
    at::Tensor block_forward(size_t i, const at::Tensor& x, const RopeTables& rope, const at::Tensor& visible,
                             KvCache* cache);
    EmbeddingLayer embed_tokens_;
    std::vector<Block> blocks_;
    NormParams norm_;
    LinearLayer lm_head_;
};

}  // namespace ql
