// SPDX-License-Identifier: GPL-3.0-or-later
// QAT of a sentence encoder (docs/TRAINING.md "Encoders"): with no labels, the task loss is the
// in-batch contrastive loss sentence-transformers trains such encoders with
// (MultipleNegativesRankingLoss, which all-MiniLM-L6-v2 was fine-tuned with), each sentence's
// positive being a second view of itself with some of its tokens deleted (self-supervised, as
// the token-deletion augmentations of CLEAR / ConSERT). The other sentences of the batch are the
// negatives. The evaluator reports the same loss on held-out sentences (contrastive_loss).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/data/dataset.h"

namespace ql {

// sentence-transformers' MultipleNegativesRankingLoss: cross-entropy of the rows of
// scale * cos(anchors[i], positives[j]) [B, B] against the diagonal. anchors, positives
// [B, dimension] float; -> a scalar. UserError for mismatched or non-2-D shapes, B < 2.
inline constexpr double kContrastiveScale = 20.0;
at::Tensor in_batch_contrastive_loss(const at::Tensor& anchors, const at::Tensor& positives,
                                     double scale = kContrastiveScale);

// The fraction of rows whose most similar positive is their own (the loss's top-1 accuracy).
double in_batch_top1(const at::Tensor& anchors, const at::Tensor& positives);

// The deletion view of a padded sentence batch (inputs / attention_mask [N, T], as
// make_sentence_dataset makes them): of every sentence's real tokens except the first and the
// last ([CLS], [SEP]), those whose draw u < rate are deleted and the rest moved left; a sentence
// with three or more tokens keeps at least one middle token (the first, if the draw took all).
// u = mix64(mix64(seed) ^ mix64(row << 32 | position)) / 2^64 (synthetic_tasks.h's mix64), the
// draw of make_masked_lm_dataset. Columns nobody uses afterwards are dropped; padding is pad_id.
inline constexpr double kDeletionRate = 0.15;
Dataset token_deletion_view(const Dataset& sentences, uint64_t seed, double rate = kDeletionRate, int64_t pad_id = 0);

}  // namespace ql
