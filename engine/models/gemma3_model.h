// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma 3 text decoders as transformers' Gemma3ForCausalLM (model_type gemma3_text: gemma-3-270m,
// gemma-3-1b; modeling_gemma3.py): embeddings scaled by sqrt(hidden), four RMSNorms per block
// with weights stored as offsets from 1 (input, post-attention, pre- and post-feedforward: the
// attention and MLP outputs are normalised before they join the residual), q_norm / k_norm per
// head, GeGLU MLP (gelu_pytorch_tanh), grouped-query attention scaled by
// query_pre_attn_scalar^-1/2, layers alternating between sliding-window and global attention
// (layer_types) with their own RoPE bases (rope_local_base_freq / rope_theta with its scaling),
// optional tanh soft-capping of the logits (attn_logit_softcapping is read but, as in
// transformers' Gemma3Attention, not applied), lm_head tied to the embeddings.
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class Gemma3Model : public Model {
public:
    explicit Gemma3Model(ModelConfig config);

    // input_ids [B, T] int64 -> logits [B, T, vocab] float32.
    at::Tensor forward(const at::Tensor& input_ids) override;
    at::Tensor forward_cached(const at::Tensor& input_ids, KvCache& cache, bool last_only = false) override;
    bool generates_text() const override { return true; }

    int64_t block_count() const override { return static_cast<int64_t>(blocks_.size()); }
    at::Tensor embed(const at::Tensor& input_ids) override;
    at::Tensor run_block(int64_t block, const at::Tensor& hidden) override;
    at::Tensor head(const at::Tensor& hidden) override;

    bool ignorable(const std::string& name) const override;

private:
    struct Block {
        NormParams input_layernorm, post_attention_layernorm, pre_feedforward_layernorm, post_feedforward_layernorm;
        LinearLayer q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
        NormParams q_norm, k_norm;
        AttentionSite attention;
    };
    // Both layer types' RoPE tables and visibility for positions past..past+T-1.
    struct Positions {
        RopeTables global, local;
        at::Tensor global_visible, local_visible;
    };
    Positions positions(int64_t t, int64_t past, const at::TensorOptions& options) const;
    at::Tensor block_forward(size_t i, const at::Tensor& x, const Positions& p, KvCache* cache);
    at::Tensor hidden_states(const at::Tensor& input_ids, KvCache* cache);

    ModelConfig local_rope_;  // config_ with the sliding layers' RoPE base and no scaling
    EmbeddingLayer embed_tokens_;
    std::vector<Block> blocks_;
    NormParams norm_;
    LinearLayer lm_head_;
};

}  // namespace ql
