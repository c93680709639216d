// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/embedding_distillation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace ql {

at::Tensor embedding_distillation_loss(const at::Tensor& student, const at::Tensor& teacher, const std::string& kind) {
    if (student.sizes() != teacher.sizes() || student.dim() != 2)
        throw UserError("embedding distillation: student and teacher embeddings must both be [batch, dimension]");
    const at::Tensor t = teacher.detach();
    if (kind == "cosine") return (1.0 - at::cosine_similarity(student, t, 1, 1e-8)).mean();
    if (kind == "mse") return (student - t).pow(2).mean();
    throw UserError("embedding distillation: the loss is cosine or mse, got '" + kind + "'");
}

at::Tensor hidden_state_mse(const std::vector<at::Tensor>& student, const std::vector<at::Tensor>& teacher,
                            const at::Tensor& attention_mask) {
    if (student.size() != teacher.size() || student.empty())
        throw UserError("hidden-state distillation: student and teacher have " + std::to_string(student.size()) + " and " +
                        std::to_string(teacher.size()) + " layers");
    const at::Tensor m = attention_mask.ne(0).unsqueeze(-1).to(student.front().scalar_type());
    const at::Tensor count = at::clamp_min(m.sum() * static_cast<double>(student.front().size(-1)), 1.0);
    at::Tensor total = at::zeros({}, student.front().options());
    for (size_t i = 0; i < student.size(); ++i) total = total + ((student[i] - teacher[i].detach()).pow(2) * m).sum() / count;
    return total / static_cast<double>(student.size());
}

}  // namespace ql
