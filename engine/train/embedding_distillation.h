// SPDX-License-Identifier: GPL-3.0-or-later
// QAD for sentence encoders (docs/TRAINING.md "Encoders"): the student matches the frozen
// teacher's sentence embeddings, optionally also every encoder layer's hidden states (as
// TinyBERT / MiniLM distil intermediate layers). Differentiable in the student's outputs.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace ql {

// student, teacher [B, D] sentence embeddings -> 0-dim float32: "cosine" = mean over the batch of
// 1 - cos(student, teacher) (cosine_similarity with eps 1e-8), "mse" = mean squared difference
// over all B x D values. UserError for another kind.
at::Tensor embedding_distillation_loss(const at::Tensor& student, const at::Tensor& teacher, const std::string& kind);

// Mean over layers of the squared difference of hidden states [B, T, H] at the real tokens
// (attention_mask [B, T] non-zero), averaged per real token and hidden unit. Same layer count in
// both lists (UserError otherwise).
at::Tensor hidden_state_mse(const std::vector<at::Tensor>& student, const std::vector<at::Tensor>& teacher,
                            const at::Tensor& attention_mask);

}  // namespace ql
