// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/llama_model.h"

#include "engine/models/transformer_ops.h"

#include <cmath>
#include <tuple>

namespace ql {

LlamaModel::LlamaModel(ModelConfig config) : Model(std::move(config)), blocks_(static_cast<size_t>(config_.num_layers)) {
    const ModelConfig& c = config_;
    const int64_t h = c.hidden_size, q_out = c.num_heads * c.head_dim, kv_out = c.num_kv_heads * c.head_dim;
    add_embedding(embed_tokens_, "model.embed_tokens", c.vocab_size, h);
    residual_.add_stage({ResidualStage::Part::Embeddings, -1, "embeddings", {"model.embed_tokens"}});
    for (int64_t i = 0; i < c.num_layers; ++i) {
        Block& b = blocks_[static_cast<size_t>(i)];
        const std::string p = "model.layers." + std::to_string(i) + ".";
        add_norm(b.input_layernorm, p + "input_layernorm", h, false);
        add_linear(b.q_proj, p + "self_attn.q_proj", h, q_out, c.attention_bias);
        add_linear(b.k_proj, p + "self_attn.k_proj", h, kv_out, c.attention_bias);
        add_linear(b.v_proj, p + "self_attn.v_proj", h, kv_out, c.attention_bias);
        add_linear(b.o_proj, p + "self_attn.o_proj", q_out, h, c.attention_out_bias);
        if (c.qk_norm) {  // Qwen3Attention registers them after o_proj
            add_norm(b.q_norm, p + "self_attn.q_norm", c.head_dim, false);
            add_norm(b.k_norm, p + "self_attn.k_norm", c.head_dim, false);
        }
        add_attention_site(b.attention, p + "self_attn");
        add_norm(b.post_attention_layernorm, p + "post_attention_layernorm", h, false);
        add_linear(b.gate_proj, p + "mlp.gate_proj", h, c.intermediate_size, c.mlp_bias);
        add_linear(b.up_proj, p + "mlp.up_proj", h, c.intermediate_size, c.mlp_bias);
        add_linear(b.down_proj, p + "mlp.down_proj", c.intermediate_size, h, c.mlp_bias);
        residual_.add_stage({ResidualStage::Part::Attention, i, p.substr(0, p.size() - 1), {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj", p + "self_attn.o_proj"}});
        residual_.add_stage({ResidualStage::Part::Mlp, i, p.substr(0, p.size() - 1), {p + "mlp.gate_proj", p + "mlp.up_proj", p + "mlp.down_proj"}});
    }
    add_norm(norm_, "model.norm", h, false);
    if (c.tie_embeddings)
        add_tied_linear(lm_head_, "lm_head", embed_tokens_);
    else
        add_linear(lm_head_, "lm_head", h, c.vocab_size, false);
}

bool LlamaModel::ignorable(const std::string& name) const {
    // Older checkpoints stored the RoPE buffer.
    const std::string suffix = "rotary_emb.inv_freq";
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return true;
    return Model::ignorable(name);
}

at::Tensor LlamaModel::block_forward(size_t i, const at::Tensor& x_in, const RopeTables& rope, const at::Tensor& visible,
                                     KvCache* cache) {
    const ModelConfig& c = config_;
    const Block& b = blocks_[i];
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const at::Tensor a = rms_norm(x_in, b.input_layernorm, c.norm_eps);
    at::Tensor q = split_heads(b.q_proj.forward(a), c.num_heads, c.head_dim);
    at::Tensor k = split_heads(b.k_proj.forward(a), c.num_kv_heads, c.head_dim);
    if (c.qk_norm) {  // Qwen3: per head, before RoPE
        q = rms_norm(q, b.q_norm, c.norm_eps);
        k = rms_norm(k, b.k_norm, c.norm_eps);
    }
    q = apply_rope(q, rope);
    k = apply_rope(k, rope);
    at::Tensor v = split_heads(b.v_proj.forward(a), c.num_kv_heads, c.head_dim);
    b.attention.apply(q, k, v);  // the KV cache's point: K after RoPE, V, before attention
    if (cache) std::tie(k, v) = cache->store(i, k, v);
    const size_t stage = 2 * i;
    at::Tensor x = residual_.pass(stage + 1, x_in + b.o_proj.forward(attention(q, k, v, visible, scale)));
    const at::Tensor m = rms_norm(x, b.post_attention_layernorm, c.norm_eps);
    return residual_.pass(stage + 2, x + b.down_proj.forward(activate(b.gate_proj.forward(m), c.activation) * b.up_proj.forward(m)));
}

at::Tensor LlamaModel::embed(const at::Tensor& ids) {
    const ModelConfig& c = config_;
    check_token_ids(ids, c.vocab_size, 0, c.name.empty() ? c.model_type : c.name);
    return residual_.pass(0, embed_tokens_.forward(ids));
}

at::Tensor LlamaModel::run_block(int64_t i, const at::Tensor& hidden) {
    check_block_index(i);
    const int64_t t = hidden.size(1);
    const at::TensorOptions positions = hidden.options().dtype(at::kLong);
    return block_forward(static_cast<size_t>(i), hidden, rope_tables(config_, t, hidden.device()),
                         causal_visibility(t, config_.sliding_window, positions), nullptr);
}

at::Tensor LlamaModel::head(const at::Tensor& hidden) { return lm_head_.forward(rms_norm(hidden, norm_, config_.norm_eps)); }

at::Tensor LlamaModel::hidden_states(const at::Tensor& ids, KvCache* cache) {
    const ModelConfig& c = config_;
    at::Tensor x = embed(ids);  // checks the ids
    const int64_t t = ids.size(1), past = cache ? cache->length() : 0;
    const RopeTables rope = rope_tables(c, t, ids.device(), past);
    const at::Tensor visible = causal_visibility(t, c.sliding_window, ids.options(), past);
    for (size_t i = 0; i < blocks_.size(); ++i) x = block_forward(i, x, rope, visible, cache);
    if (cache) cache->advance(t);
    return rms_norm(x, norm_, c.norm_eps);
}

at::Tensor LlamaModel::forward(const at::Tensor& ids) { return lm_head_.forward(hidden_states(ids)); }

at::Tensor LlamaModel::forward_cached(const at::Tensor& ids, KvCache& cache, bool last_only) {
    const at::Tensor h = hidden_states(ids, &cache);
    return lm_head_.forward(last_only ? h.narrow(1, h.size(1) - 1, 1) : h);
}

}  // namespace ql
