// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/gemma3_model.h"

#include <ATen/ops/tanh.h>

#include <cmath>
#include <tuple>

#include "engine/models/transformer_ops.h"

namespace ql {

Gemma3Model::Gemma3Model(ModelConfig config) : Model(std::move(config)), blocks_(static_cast<size_t>(config_.num_layers)) {
    const ModelConfig& c = config_;
    local_rope_ = c;
    local_rope_.rope_theta = c.rope_local_theta;
    local_rope_.rope_scaling = RopeScaling{};
    const int64_t h = c.hidden_size, q_out = c.num_heads * c.head_dim, kv_out = c.num_kv_heads * c.head_dim;
    add_embedding(embed_tokens_, "model.embed_tokens", c.vocab_size, h);
    residual_.add_stage({ResidualStage::Part::Embeddings, -1, "embeddings", {"model.embed_tokens"}});
    // Registration in Gemma3DecoderLayer's order (self_attn, mlp, then the four norms), so that
    // file_state() lists tensors as transformers' state_dict does.
    for (int64_t i = 0; i < c.num_layers; ++i) {
        Block& b = blocks_[static_cast<size_t>(i)];
        const std::string p = "model.layers." + std::to_string(i) + ".";
        add_linear(b.q_proj, p + "self_attn.q_proj", h, q_out, c.attention_bias);
        add_linear(b.k_proj, p + "self_attn.k_proj", h, kv_out, c.attention_bias);
        add_linear(b.v_proj, p + "self_attn.v_proj", h, kv_out, c.attention_bias);
        add_linear(b.o_proj, p + "self_attn.o_proj", q_out, h, c.attention_out_bias);
        add_norm(b.q_norm, p + "self_attn.q_norm", c.head_dim, false, Init::Zeros);
        add_norm(b.k_norm, p + "self_attn.k_norm", c.head_dim, false, Init::Zeros);
        add_attention_site(b.attention, p + "self_attn");
        add_linear(b.gate_proj, p + "mlp.gate_proj", h, c.intermediate_size, false);
        add_linear(b.up_proj, p + "mlp.up_proj", h, c.intermediate_size, false);
        add_linear(b.down_proj, p + "mlp.down_proj", c.intermediate_size, h, false);
        add_norm(b.input_layernorm, p + "input_layernorm", h, false, Init::Zeros);
        add_norm(b.post_attention_layernorm, p + "post_attention_layernorm", h, false, Init::Zeros);
        add_norm(b.pre_feedforward_layernorm, p + "pre_feedforward_layernorm", h, false, Init::Zeros);
        add_norm(b.post_feedforward_layernorm, p + "post_feedforward_layernorm", h, false, Init::Zeros);
        const std::string block = p.substr(0, p.size() - 1);
        residual_.add_stage({ResidualStage::Part::Attention, i, block,
                             {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj", p + "self_attn.o_proj"}});
        residual_.add_stage({ResidualStage::Part::Mlp, i, block, {p + "mlp.gate_proj", p + "mlp.up_proj", p + "mlp.down_proj"}});
    }
    add_norm(norm_, "model.norm", h, false, Init::Zeros);
    if (c.tie_embeddings)
        add_tied_linear(lm_head_, "lm_head", embed_tokens_);
    else
        add_linear(lm_head_, "lm_head", h, c.vocab_size, false);
}

bool Gemma3Model::ignorable(const std::string& name) const {
    const std::string suffix = "rotary_emb.inv_freq";
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return true;
    return Model::ignorable(name);
}

Gemma3Model::Positions Gemma3Model::positions(int64_t t, int64_t past, const at::TensorOptions& options) const {
    Positions p;
    p.global = rope_tables(config_, t, options.device(), past);
    p.local = rope_tables(local_rope_, t, options.device(), past);
    const at::TensorOptions ids = options.dtype(at::kLong);
    p.global_visible = causal_visibility(t, 0, ids, past);
    p.local_visible = causal_visibility(t, config_.sliding_window, ids, past);
    return p;
}

at::Tensor Gemma3Model::block_forward(size_t i, const at::Tensor& x_in, const Positions& p, KvCache* cache) {
    const ModelConfig& c = config_;
    const Block& b = blocks_[i];
    const bool sliding = c.sliding_layers.empty() ? c.sliding_window > 0 : c.sliding_layers[i];
    const RopeTables& rope = sliding ? p.local : p.global;
    const double eps = c.norm_eps;
    const at::Tensor a = gemma_rms_norm(x_in, b.input_layernorm, eps);
    at::Tensor q = apply_rope(gemma_rms_norm(split_heads(b.q_proj.forward(a), c.num_heads, c.head_dim), b.q_norm, eps), rope);
    at::Tensor k = apply_rope(gemma_rms_norm(split_heads(b.k_proj.forward(a), c.num_kv_heads, c.head_dim), b.k_norm, eps), rope);
    at::Tensor v = split_heads(b.v_proj.forward(a), c.num_kv_heads, c.head_dim);
    b.attention.apply(q, k, v);  // the KV cache's point: K after RoPE, V, before attention
    if (cache) std::tie(k, v) = cache->store(i, k, v);
    // Gemma3Attention.scaling = query_pre_attn_scalar ** -0.5
    const double scale = std::pow(c.query_pre_attn_scalar, -0.5);
    // No soft-capping of the scores: Gemma 3 replaced Gemma 2's with q_norm / k_norm, and
    // transformers' Gemma3Attention.forward (modeling_gemma3.py, 5.23) passes no softcap to the
    // attention even when config.json still has attn_logit_softcapping (tested: a config with 2.0
    // gives the same logits as one without).
    const at::Tensor attended = attention(q, k, v, sliding ? p.local_visible : p.global_visible, scale, 0.0);
    const size_t stage = 2 * i;
    const at::Tensor x = residual_.pass(stage + 1, x_in + gemma_rms_norm(b.o_proj.forward(attended), b.post_attention_layernorm, eps));
    const at::Tensor m = gemma_rms_norm(x, b.pre_feedforward_layernorm, eps);
    const at::Tensor mlp = b.down_proj.forward(activate(b.gate_proj.forward(m), c.activation) * b.up_proj.forward(m));
    return residual_.pass(stage + 2, x + gemma_rms_norm(mlp, b.post_feedforward_layernorm, eps));
}

at::Tensor Gemma3Model::embed(const at::Tensor& ids) {
    const ModelConfig& c = config_;
    check_token_ids(ids, c.vocab_size, 0, c.name.empty() ? c.model_type : c.name);
    // Gemma3TextScaledWordEmbedding: embed_scale = torch.tensor(hidden ** 0.5), a float32 scalar.
    const auto embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
    return residual_.pass(0, embed_tokens_.forward(ids) * embed_scale);
}

at::Tensor Gemma3Model::run_block(int64_t i, const at::Tensor& hidden) {
    check_block_index(i);
    return block_forward(static_cast<size_t>(i), hidden, positions(hidden.size(1), 0, hidden.options()), nullptr);
}

at::Tensor Gemma3Model::head(const at::Tensor& hidden) {
    at::Tensor logits = lm_head_.forward(gemma_rms_norm(hidden, norm_, config_.norm_eps));
    const double cap = config_.final_logit_softcapping;
    if (cap > 0) logits = at::tanh(logits / cap) * cap;
    return logits;
}

at::Tensor Gemma3Model::hidden_states(const at::Tensor& ids, KvCache* cache) {
    at::Tensor x = embed(ids);
    const int64_t t = ids.size(1), past = cache ? cache->length() : 0;
    const Positions p = positions(t, past, ids.options());
    for (size_t i = 0; i < blocks_.size(); ++i) x = block_forward(i, x, p, cache);
    if (cache) cache->advance(t);
    return x;
}

at::Tensor Gemma3Model::forward(const at::Tensor& ids) { return head(hidden_states(ids, nullptr)); }

at::Tensor Gemma3Model::forward_cached(const at::Tensor& ids, KvCache& cache, bool last_only) {
    const at::Tensor h = hidden_states(ids, &cache);
    return head(last_only ? h.narrow(1, h.size(1) - 1, 1) : h);
}

}  // namespace ql
