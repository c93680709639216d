// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/gpt2_model.h"

#include <ATen/ops/arange.h>

#include <cmath>
#include <tuple>

#include "engine/models/transformer_ops.h"
#include "engine/core/errors.h"
#include "engine/core/string_suffix.h"

namespace ql {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

Gpt2Model::Gpt2Model(ModelConfig config) : Model(std::move(config)), blocks_(static_cast<size_t>(config_.num_layers)) {
    const ModelConfig& c = config_;
    const int64_t h = c.hidden_size;
    constexpr bool kConv1D = true;  // HF Conv1D: [in, out] in files
    add_embedding(wte_, "transformer.wte", c.vocab_size, h);
    add_embedding(wpe_, "transformer.wpe", c.max_positions, h);
    residual_.add_stage({ResidualStage::Part::Embeddings, -1, "embeddings", {"transformer.wte", "transformer.wpe"}});
    for (int64_t i = 0; i < c.num_layers; ++i) {
        Block& b = blocks_[static_cast<size_t>(i)];
        const std::string p = "transformer.h." + std::to_string(i) + ".";
        add_norm(b.ln_1, p + "ln_1", h, true);
        add_linear(b.c_attn, p + "attn.c_attn", h, 3 * h, true, Init::Normal002, kConv1D);
        add_linear(b.attn_c_proj, p + "attn.c_proj", h, h, true, Init::Normal002, kConv1D);
        add_attention_site(b.attention, p + "attn");
        add_norm(b.ln_2, p + "ln_2", h, true);
        add_linear(b.c_fc, p + "mlp.c_fc", h, c.intermediate_size, true, Init::Normal002, kConv1D);
        add_linear(b.mlp_c_proj, p + "mlp.c_proj", c.intermediate_size, h, true, Init::Normal002, kConv1D);
        residual_.add_stage({ResidualStage::Part::Attention, i, p.substr(0, p.size() - 1), {p + "attn.c_attn", p + "attn.c_proj"}});
        residual_.add_stage({ResidualStage::Part::Mlp, i, p.substr(0, p.size() - 1), {p + "mlp.c_fc", p + "mlp.c_proj"}});
    }
    add_norm(ln_f_, "transformer.ln_f", h, true);
    if (c.tie_embeddings)
        add_tied_linear(lm_head_, "lm_head", wte_);
    else
        add_linear(lm_head_, "lm_head", h, c.vocab_size, false);
}

std::string Gpt2Model::canonical_name(const std::string& n) const {
    if (starts_with(n, "h.") || starts_with(n, "wte.") || starts_with(n, "wpe.") || starts_with(n, "ln_f."))
        return "transformer." + n;
    return n;
}

bool Gpt2Model::ignorable(const std::string& name) const {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") || Model::ignorable(name);
}

at::Tensor Gpt2Model::embed_at(const at::Tensor& ids, int64_t past) {
    const ModelConfig& c = config_;
    check_token_ids(ids, c.vocab_size, c.max_positions, c.name.empty() ? c.model_type : c.name);
    if (past + ids.size(1) > c.max_positions)
        throw UserError((c.name.empty() ? c.model_type : c.name) + ": position " + std::to_string(past + ids.size(1)) +
                        " is past the " + std::to_string(c.max_positions) + " positions the model has");
    const int64_t t = ids.size(1);
    return residual_.pass(0, wte_.forward(ids) + wpe_.forward(at::arange(past, past + t, ids.options())));
}

at::Tensor Gpt2Model::block_forward(size_t i, const at::Tensor& x_in, const at::Tensor& visible, KvCache* cache) {
    const ModelConfig& c = config_;
    const Block& b = blocks_[i];
    const int64_t h = c.hidden_size;
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const at::Tensor qkv = b.c_attn.forward(layer_norm(x_in, b.ln_1, c.norm_eps));
    at::Tensor q = split_heads(qkv.narrow(-1, 0, h), c.num_heads, c.head_dim);
    at::Tensor k = split_heads(qkv.narrow(-1, h, h), c.num_heads, c.head_dim);
    at::Tensor v = split_heads(qkv.narrow(-1, 2 * h, h), c.num_heads, c.head_dim);
    b.attention.apply(q, k, v);  // the KV cache's point, before attention
    if (cache) std::tie(k, v) = cache->store(i, k, v);
    const size_t stage = 2 * i;
    const at::Tensor x = residual_.pass(stage + 1, x_in + b.attn_c_proj.forward(attention(q, k, v, visible, scale)));
    return residual_.pass(stage + 2, x + b.mlp_c_proj.forward(activate(b.c_fc.forward(layer_norm(x, b.ln_2, c.norm_eps)), c.activation)));
}

at::Tensor Gpt2Model::embed(const at::Tensor& ids) { return embed_at(ids, 0); }

at::Tensor Gpt2Model::run_block(int64_t i, const at::Tensor& hidden) {
    check_block_index(i);
    return block_forward(static_cast<size_t>(i), hidden, causal_visibility(hidden.size(1), 0, hidden.options().dtype(at::kLong)),
                         nullptr);
}

at::Tensor Gpt2Model::head(const at::Tensor& hidden) { return lm_head_.forward(layer_norm(hidden, ln_f_, config_.norm_eps)); }

at::Tensor Gpt2Model::hidden_states(const at::Tensor& ids, KvCache* cache) {
    const int64_t past = cache ? cache->length() : 0;
    at::Tensor x = embed_at(ids, past);
    const int64_t t = ids.size(1);
    const at::Tensor visible = causal_visibility(t, 0, ids.options(), past);
    for (size_t i = 0; i < blocks_.size(); ++i) x = block_forward(i, x, visible, cache);
    if (cache) cache->advance(t);
    return layer_norm(x, ln_f_, config_.norm_eps);
}

at::Tensor Gpt2Model::forward(const at::Tensor& ids) { return lm_head_.forward(hidden_states(ids)); }

at::Tensor Gpt2Model::forward_cached(const at::Tensor& ids, KvCache& cache, bool last_only) {
    const at::Tensor h = hidden_states(ids, &cache);
    return lm_head_.forward(last_only ? h.narrow(1, h.size(1) - 1, 1) : h);
}

}  // namespace ql
