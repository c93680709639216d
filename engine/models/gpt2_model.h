// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 as transformers' GPT2LMHeadModel: learned positions, pre-LayerNorm blocks, the fused
// c_attn projection (q, k, v in that order along its outputs), gelu_new, lm_head tied to wte.
// HF stores GPT-2's Conv1D weights as [in, out]; here every Linear is [out, in] and
// LinearLayer::file_layout_in_out marks the layers to transpose back for files.
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class Gpt2Model : public Model {
public:
    explicit Gpt2Model(ModelConfig config);

    // input_ids [B, T] int64, T <= n_positions -> logits [B, T, vocab] float32.
    at::Tensor forward(const at::Tensor& input_ids) override;
    at::Tensor forward_cached(const at::Tensor& input_ids, KvCache& cache, bool last_only = false) override;
    bool generates_text() const override { return true; }
    // After ln_f, [B, T, hidden]; with a cache, of the tokens after the cached ones.
    at::Tensor hidden_states(const at::Tensor& input_ids, KvCache* cache = nullptr);

    int64_t block_count() const override { return static_cast<int64_t>(blocks_.size()); }
    at::Tensor embed(const at::Tensor& input_ids) override;
    at::Tensor run_block(int64_t block, const at::Tensor& hidden) override;
    at::Tensor head(const at::Tensor& hidden) override;

    // GPT2Model checkpoints (the original "gpt2" on the Hub) lack the "transformer." prefix.
    std::string canonical_name(const std::string& file_name) const override;
    // The causal-mask buffers attn.bias / attn.masked_bias of older checkpoints.
    bool ignorable(const std::string& name) const override;

private:
    struct Block {
        NormParams ln_1, ln_2;
        LinearLayer c_attn, attn_c_proj, c_fc, mlp_c_proj;
        AttentionSite attention;
    };
    // Token and position embeddings of positions past..past+T-1 (ids checked).
    at::Tensor embed_at(const at::Tensor& ids, int64_t past);
    at::Tensor block_forward(size_t i, const at::Tensor& x, const at::Tensor& visible, KvCache* cache);
    EmbeddingLayer wte_, wpe_;
    std::vector<Block> blocks_;
    NormParams ln_f_;
    LinearLayer lm_head_;
};

}  // namespace ql
