// SPDX-License-Identifier: GPL-3.0-or-later
// Per-position and per-example metrics from logits (docs/DATA.md "Metrics"). Shapes: logits
// [B, T, V] with targets [B, T] (token models), or logits [B, C] with targets [B] (classifiers,
// treated as T = 1). Targets equal to Dataset::kIgnoreIndex (-100) are not scored. Natural logs.
#pragma once

#include <ATen/core/Tensor.h>

namespace ql {

// Negative log-likelihood of the target at every position, float32 [B, T] (0 where unscored).
at::Tensor token_nll(const at::Tensor& logits, const at::Tensor& targets);

// Scored positions, bool [B, T].
at::Tensor scored_mask(const at::Tensor& targets);

// Per example, bool [B]: true iff the argmax at every scored position equals the target (the
// same answer greedy decoding would give, from one teacher-forced pass). Examples without any
// scored position are false.
at::Tensor exact_match(const at::Tensor& logits, const at::Tensor& targets);

// KL(teacher || student) = sum_v p_t(v) (log p_t(v) - log p_s(v)) at every position, float32
// [B, T]; both logits over the same vocabulary.
at::Tensor token_kl(const at::Tensor& teacher_logits, const at::Tensor& student_logits);

// Whether the student's top-1 token equals the teacher's, bool [B, T].
at::Tensor top1_agreement(const at::Tensor& teacher_logits, const at::Tensor& student_logits);

}  // namespace ql
