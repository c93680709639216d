// SPDX-License-Identifier: GPL-3.0-or-later
// BERT encoders as transformers' BertModel (also MiniLM sentence-embedding models): word +
// absolute position + token-type embeddings, post-LayerNorm blocks, exact (erf) GELU,
// bidirectional attention over the non-padding tokens. Checkpoints of BertFor* classes carry a
// "bert." prefix (accepted); the pooler and task heads (pooler.*, cls.*, classifier.*) are not
// part of this model and are skipped on load (listed in LoadReport::ignored): sentence
// embeddings use mean_pool over encode()'s hidden states instead.
#pragma once

#include <vector>

#include "engine/models/model.h"

namespace ql {

class BertModel : public Model {
public:
    explicit BertModel(ModelConfig config);

    // input_ids [B, T] int64 -> last hidden state [B, T, hidden]; all tokens attended, type 0.
    at::Tensor forward(const at::Tensor& input_ids) override;
    // attention_mask [B, T] (non-zero = real token) or undefined = all; token_type_ids [B, T]
    // int64 in [0, type_vocab_size) or undefined = 0. -> last hidden state [B, T, hidden].
    at::Tensor encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                      const at::Tensor& token_type_ids);

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
};

}  // namespace ql
