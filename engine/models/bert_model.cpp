// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/bert_model.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/zeros_like.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/models/transformer_ops.h"

namespace ql {

BertModel::BertModel(ModelConfig config) : Model(std::move(config)), blocks_(static_cast<size_t>(config_.num_layers)) {
    const ModelConfig& c = config_;
    const int64_t h = c.hidden_size;
    add_embedding(word_embeddings_, "embeddings.word_embeddings", c.vocab_size, h);
    add_embedding(position_embeddings_, "embeddings.position_embeddings", c.max_positions, h);
    add_embedding(token_type_embeddings_, "embeddings.token_type_embeddings", c.type_vocab_size, h);
    add_norm(embeddings_norm_, "embeddings.LayerNorm", h, true);
    residual_.add_stage({ResidualStage::Part::Embeddings, -1, "embeddings", {"embeddings.word_embeddings", "embeddings.position_embeddings", "embeddings.token_type_embeddings"}});
    for (int64_t i = 0; i < c.num_layers; ++i) {
        Block& b = blocks_[static_cast<size_t>(i)];
        const std::string p = "encoder.layer." + std::to_string(i) + ".";
        add_linear(b.query, p + "attention.self.query", h, h, true);
        add_linear(b.key, p + "attention.self.key", h, h, true);
        add_linear(b.value, p + "attention.self.value", h, h, true);
        add_linear(b.attention_output, p + "attention.output.dense", h, h, true);
        add_norm(b.attention_norm, p + "attention.output.LayerNorm", h, true);
        add_linear(b.intermediate, p + "intermediate.dense", h, c.intermediate_size, true);
        add_linear(b.output, p + "output.dense", c.intermediate_size, h, true);
        add_norm(b.output_norm, p + "output.LayerNorm", h, true);
        // BERT's blocks have no "mlp" module: the feed-forward half is intermediate + output.
        residual_.add_stage({ResidualStage::Part::Attention, i, p.substr(0, p.size() - 1), {p + "attention.self.query", p + "attention.self.key", p + "attention.self.value", p + "attention.output.dense"}});
        residual_.add_stage({ResidualStage::Part::Mlp, i, p.substr(0, p.size() - 1), {p + "intermediate.dense", p + "output.dense"}});
    }
    if (c.mlm_head) {
        add_linear(mlm_transform_, "cls.predictions.transform.dense", h, h, true);
        add_norm(mlm_norm_, "cls.predictions.transform.LayerNorm", h, true);
        add_tied_linear(mlm_decoder_, "cls.predictions.decoder", word_embeddings_, "cls.predictions.bias");
    }
}

std::string BertModel::canonical_name(const std::string& n) const {
    return n.rfind("bert.", 0) == 0 ? n.substr(5) : n;
}

bool BertModel::ignorable(const std::string& n) const {
    // With an MLM head: the decoder's weight and bias are the word embeddings and
    // cls.predictions.bias (tied, as transformers ties them); the NSP head is not used.
    const bool head_part = config_.mlm_head ? n.rfind("cls.predictions.decoder.", 0) == 0 || n.rfind("cls.seq_relationship.", 0) == 0
                                            : n.rfind("cls.", 0) == 0;
    return n == "embeddings.position_ids" || n.rfind("pooler.", 0) == 0 || head_part ||
           n.rfind("classifier.", 0) == 0 || Model::ignorable(n);
}

at::Tensor BertModel::forward(const at::Tensor& ids) { return forward_padded(ids, at::Tensor()); }

at::Tensor BertModel::forward_padded(const at::Tensor& ids, const at::Tensor& attention_mask) {
    const at::Tensor hidden = encode(ids, attention_mask, at::Tensor());
    return config_.mlm_head ? mlm_logits(hidden) : hidden;
}

at::Tensor BertModel::mlm_logits(const at::Tensor& hidden) {
    if (!config_.mlm_head) throw UserError((config_.name.empty() ? config_.model_type : config_.name) + ": the model has no MLM head");
    const at::Tensor x = layer_norm(activate(mlm_transform_.forward(hidden), config_.activation), mlm_norm_, config_.norm_eps);
    return mlm_decoder_.forward(x);
}

at::Tensor BertModel::encode(const at::Tensor& ids, const at::Tensor& attention_mask, const at::Tensor& token_types,
                            std::vector<at::Tensor>* layer_outputs) {
    const ModelConfig& c = config_;
    const std::string what = c.name.empty() ? c.model_type : c.name;
    check_token_ids(ids, c.vocab_size, c.max_positions, what);
    const int64_t t = ids.size(1);
    at::Tensor types = token_types.defined() ? token_types : at::zeros_like(ids);
    if (token_types.defined()) {
        if (token_types.sizes() != ids.sizes()) throw UserError(what + ": token_type_ids must have the shape of input_ids");
        check_token_ids(types, c.type_vocab_size, 0, what + " token types");
    }
    at::Tensor visible = at::ones({1, 1, 1, t}, ids.options().dtype(at::kBool));
    if (attention_mask.defined()) {
        if (attention_mask.sizes() != ids.sizes())
            throw UserError(what + ": attention_mask must have the shape of input_ids");
        visible = (attention_mask != 0).unsqueeze(1).unsqueeze(1);  // [B, 1, 1, T]: keys
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));

    at::Tensor x = word_embeddings_.forward(ids) + token_type_embeddings_.forward(types) +
                   position_embeddings_.forward(at::arange(t, ids.options()));
    x = residual_.pass(0, layer_norm(x, embeddings_norm_, c.norm_eps));
    size_t stage = 0;
    for (const Block& b : blocks_) {
        const at::Tensor q = split_heads(b.query.forward(x), c.num_heads, c.head_dim);
        const at::Tensor k = split_heads(b.key.forward(x), c.num_heads, c.head_dim);
        const at::Tensor v = split_heads(b.value.forward(x), c.num_heads, c.head_dim);
        const at::Tensor context = attention(q, k, v, visible, scale);
        const at::Tensor a = residual_.pass(++stage, layer_norm(b.attention_output.forward(context) + x, b.attention_norm, c.norm_eps));
        const at::Tensor i = activate(b.intermediate.forward(a), c.activation);
        x = residual_.pass(++stage, layer_norm(b.output.forward(i) + a, b.output_norm, c.norm_eps));
        if (layer_outputs) layer_outputs->push_back(x);
    }
    return x;
}

}  // namespace ql
