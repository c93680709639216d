// SPDX-License-Identifier: GPL-3.0-or-later
// BERT encoders as transformers' BertModel (also MiniLM sentence-embedding models): word +
// absolute position + token-type embeddings, post-LayerNorm blocks, exact (erf) GELU,
// bidirectional attention over the non-padding tokens. Checkpoints of BertFor* classes carry a
// "bert." prefix (accepted). With config.mlm_head (BertForMaskedLM / BertForPreTraining) the
// masked-LM head of transformers' BertLMPredictionHead is part of the model (cls.predictions:
// transform.dense, activation, transform.LayerNorm, then the decoder tied to the word
// embeddings plus cls.predictions.bias); otherwise the pooler and task heads (pooler.*, cls.*,
// classifier.*) are skipped on load (listed in LoadReport::ignored). Sentence embeddings pool
// encode()'s hidden states (sentence_pooling.h).
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class BertModel : public Model {
public:
    explicit BertModel(ModelConfig config);

    // input_ids [B, T] int64 -> last hidden state [B, T, hidden] (MLM logits [B, T, vocab] with an
    // MLM head); all tokens attended, type 0.
    at::Tensor forward(const at::Tensor& input_ids) override;
    // The same for a padded batch: only tokens with a non-zero attention_mask are attended.
    at::Tensor forward_padded(const at::Tensor& input_ids, const at::Tensor& attention_mask) override;
    bool is_encoder() const override { return true; }

    // attention_mask [B, T] (non-zero = real token) or undefined = all; token_type_ids [B, T]
    // int64 in [0, type_vocab_size) or undefined = 0. -> last hidden state [B, T, hidden].
    // layer_outputs (optional) receives every block's output [B, T, hidden] in order.
    at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& token_type_ids,
                      std::vector<at::Tensor>* layer_outputs = nullptr);
    // The MLM head on hidden states [B, T, hidden] -> logits [B, T, vocab]. UserError without a head.
    at::Tensor mlm_logits(const at::Tensor& hidden);

    std::string canonical_name(const std::string& file_name) const override;
    bool ignorable(const std::string& name) const override;

private:
    struct Block {
        LinearLayer query, key, value, attention_output;
        NormParams attention_norm;
        LinearLayer intermediate, output;
        NormParams output_norm;
    };
    EmbeddingLayer word_embeddings_, position_embeddings_, token_type_embeddings_;
    NormParams embeddings_norm_;
    std::vector<Block> blocks_;
    // MLM head (config.mlm_head).
    LinearLayer mlm_transform_, mlm_decoder_;
    NormParams mlm_norm_;
};

}  // namespace ql
