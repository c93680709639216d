// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/generation/generation_divergence.h"

#include <ATen/ops/log_softmax.h>
#include <ATen/ops/tensor.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/models/frozen_effective_weights.h"
#include "engine/models/model_device.h"

namespace ql {

std::vector<double> generation_kl(Model& reference, const GenerationResult& g) {
    if (g.tokens.empty()) return {};
    if (!g.logits.defined() || g.logits.size(0) != static_cast<int64_t>(g.tokens.size()))
        throw UserError("generation divergence: the generation kept no logits");
    if (g.logits.size(1) != reference.config().vocab_size)
        throw UserError("generation divergence: the reference has " + std::to_string(reference.config().vocab_size) +
                        " tokens, the model " + std::to_string(g.logits.size(1)));
    c10::InferenceMode inference;
    FrozenEffectiveWeights frozen(reference);
    // Positions P-1 .. P+n-2 predict the n generated tokens.
    std::vector<int64_t> ids = g.prompt_ids;
    for (size_t i = 0; i + 1 < g.tokens.size(); ++i) ids.push_back(g.tokens[i].id);
    const at::Tensor input = on_model_device(reference, at::tensor(ids, at::kLong).unsqueeze(0));
    const int64_t n = static_cast<int64_t>(g.tokens.size()), first = static_cast<int64_t>(g.prompt_ids.size()) - 1;
    const at::Tensor ref = reference.forward(input).select(0, 0).narrow(0, first, n).to(at::kCPU, at::kDouble);
    const at::Tensor log_p = at::log_softmax(ref, -1);
    const at::Tensor log_q = at::log_softmax(g.logits.to(at::kDouble), -1);
    const at::Tensor kl = (log_p.exp() * (log_p - log_q)).sum(-1).clamp_min(0.0).contiguous();
    const double* p = kl.data_ptr<double>();
    return {p, p + n};
}

int64_t first_divergent_token(const GenerationResult& a, const GenerationResult& b) {
    const size_t n = std::min(a.tokens.size(), b.tokens.size());
    for (size_t i = 0; i < n; ++i)
        if (a.tokens[i].id != b.tokens[i].id) return static_cast<int64_t>(i);
    if (a.tokens.size() == b.tokens.size()) return -1;
    return static_cast<int64_t>(n);
}

}  // namespace ql
