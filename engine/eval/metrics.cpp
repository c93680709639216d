// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/metrics.h"

#include <ATen/Functions.h>

#include "engine/data/dataset.h"

namespace ql {
namespace {

// Classifier logits [B, C] become [B, 1, C] so every metric has one code path.
at::Tensor as_sequence_logits(const at::Tensor& logits) { return logits.dim() == 2 ? logits.unsqueeze(1) : logits; }
at::Tensor as_sequence_targets(const at::Tensor& targets) { return targets.dim() == 1 ? targets.unsqueeze(1) : targets; }

}  // namespace

at::Tensor scored_mask(const at::Tensor& targets) { return as_sequence_targets(targets).ne(Dataset::kIgnoreIndex); }

at::Tensor token_nll(const at::Tensor& logits, const at::Tensor& targets) {
    const at::Tensor l = as_sequence_logits(logits).to(at::kFloat);
    const at::Tensor t = as_sequence_targets(targets);
    const at::Tensor mask = t.ne(Dataset::kIgnoreIndex);
    const at::Tensor safe = t.masked_fill(~mask, 0);
    const at::Tensor logp = at::log_softmax(l, -1).gather(-1, safe.unsqueeze(-1)).squeeze(-1);
    return logp.neg().masked_fill(~mask, 0.0);
}

at::Tensor exact_match(const at::Tensor& logits, const at::Tensor& targets) {
    const at::Tensor l = as_sequence_logits(logits);
    const at::Tensor t = as_sequence_targets(targets);
    const at::Tensor mask = t.ne(Dataset::kIgnoreIndex);
    const at::Tensor right = l.argmax(-1).eq(t).logical_or(~mask);
    return right.all(1).logical_and(mask.any(1));
}

at::Tensor token_kl(const at::Tensor& teacher_logits, const at::Tensor& student_logits) {
    const at::Tensor lt = at::log_softmax(as_sequence_logits(teacher_logits).to(at::kFloat), -1);
    const at::Tensor ls = at::log_softmax(as_sequence_logits(student_logits).to(at::kFloat), -1);
    // Terms with p_t = 0 contribute 0 (lt.exp() is exactly 0 there, and lt - ls is finite
    // unless the student assigns -inf, which log_softmax of finite logits never does).
    return lt.exp().mul(lt.sub(ls)).sum(-1).clamp_min(0.0);
}

at::Tensor top1_agreement(const at::Tensor& teacher_logits, const at::Tensor& student_logits) {
    return as_sequence_logits(teacher_logits).argmax(-1).eq(as_sequence_logits(student_logits).argmax(-1));
}

}  // namespace ql
