// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/distillation_loss.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace ql {

at::Tensor distillation_kl(const at::Tensor& teacher_logits, const at::Tensor& student_logits, const at::Tensor& mask,
                           double temperature) {
    if (!(temperature > 0)) throw UserError("distillation: the temperature must be positive");
    if (teacher_logits.sizes() != student_logits.sizes())
        throw UserError("distillation: teacher and student logits differ in shape (vocabularies must match)");
    const at::Tensor log_t = at::log_softmax(teacher_logits.to(at::kFloat) / temperature, -1);
    const at::Tensor log_s = at::log_softmax(student_logits.to(at::kFloat) / temperature, -1);
    const at::Tensor kl = (log_t.exp() * (log_t - log_s)).sum(-1);  // [B, T]
    const at::Tensor m = mask.to(at::kFloat);
    const at::Tensor count = m.sum().clamp_min(1.0);
    return (kl * m).sum() / count * (temperature * temperature);
}

}  // namespace ql
