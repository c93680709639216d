// SPDX-License-Identifier: GPL-3.0-or-later
// The QAD loss (shared/design/QAT.md): forward KL(teacher || student) between the next-token
// distributions at temperature T, times T^2 (Hinton et al. 2015; Model Optimizer's logits
// distillation loss), averaged over scored positions. Differentiable in the student's logits.
#pragma once

#include <ATen/core/Tensor.h>

namespace ql {

// teacher_logits, student_logits [B, T, V] (or [B, V]); mask [B, T] (or [B]) bool, true where a
// position is scored. Returns a 0-dim float32 tensor; 0 when no position is scored.
at::Tensor distillation_kl(const at::Tensor& teacher_logits, const at::Tensor& student_logits, const at::Tensor& mask,
                           double temperature);

}  // namespace ql
