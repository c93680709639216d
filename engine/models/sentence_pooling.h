// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence embeddings from an encoder's token states, as sentence-transformers computes them
// (sentence_transformer/modules/pooling.py Pooling._forward_padded, base/modules/normalize.py):
// the same operations in the same order, float32.
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/models/model.h"
#include "engine/models/sentence_embedding_config.h"

namespace ql {

// hidden [B, T, H] float32, attention_mask [B, T] (non-zero = real token) -> [B, modes * H]:
// each pooling mode of `config` over the real tokens, concatenated; then L2-normalised when
// config.normalize (x / max(|x|, 1e-12), torch.nn.functional.normalize). A row without real
// tokens gives what sentence-transformers gives (mean 0, max -inf).
at::Tensor pool_sentence_embeddings(const at::Tensor& hidden, const at::Tensor& attention_mask,
                                    const SentenceEmbeddingConfig& config);

// The sentence embeddings of a padded batch (input_ids, attention_mask [B, T]) through an
// encoder (BERT): its last hidden state pooled by its config().sentence. UserError for models
// that are not encoders.
at::Tensor sentence_embeddings(Model& model, const at::Tensor& input_ids, const at::Tensor& attention_mask);

}  // namespace ql
