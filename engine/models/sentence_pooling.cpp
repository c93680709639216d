// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/sentence_pooling.h"

#include <ATen/Functions.h>

#include <limits>
#include <vector>

#include "engine/core/errors.h"
#include "engine/models/bert_model.h"

namespace ql {

at::Tensor pool_sentence_embeddings(const at::Tensor& hidden, const at::Tensor& attention_mask,
                                    const SentenceEmbeddingConfig& config) {
    if (hidden.dim() != 3 || attention_mask.dim() != 2 || attention_mask.size(0) != hidden.size(0) ||
        attention_mask.size(1) != hidden.size(1))
        throw UserError("sentence pooling: expected hidden [B, T, H] and attention_mask [B, T]");
    if (config.pooling.empty()) throw UserError("sentence pooling: no pooling mode");
    const int64_t t = hidden.size(1), h = hidden.size(2);
    const at::Tensor mask = attention_mask.ne(0).to(at::kLong);
    std::vector<at::Tensor> parts;
    at::Tensor mean_sum, mean_count;
    for (const std::string& mode : config.pooling) {
        if (mode == "cls") {
            // The first real token (argmax of the mask), as pooling.py gathers it.
            const at::Tensor first = mask.to(at::kInt).argmax(1);
            parts.push_back(at::gather(hidden, 1, first.view({-1, 1, 1}).expand({-1, 1, h})).squeeze(1));
        } else if (mode == "max") {
            const at::Tensor m = mask.unsqueeze(-1).expand_as(hidden).to(hidden.scalar_type());
            parts.push_back(std::get<0>(hidden.masked_fill(m.eq(0), -std::numeric_limits<float>::infinity()).max(1)));
        } else if (mode == "mean" || mode == "mean_sqrt_len_tokens") {
            if (!mean_sum.defined()) {
                const at::Tensor m = mask.unsqueeze(-1).to(hidden.scalar_type());
                mean_sum = (hidden * m).sum(1);
                mean_count = at::clamp_min(m.sum(1), 1e-9);
            }
            parts.push_back(mode == "mean" ? mean_sum / mean_count : mean_sum / at::sqrt(mean_count));
        } else if (mode == "weightedmean") {
            // Position weights 1..T, shifted by any left padding (pooling.py).
            const at::Tensor m = mask.unsqueeze(-1).to(hidden.scalar_type());
            at::Tensor weights = at::arange(1, t + 1, hidden.options()).view({1, -1, 1});
            weights = weights - mask.to(at::kInt).argmax(1).view({-1, 1, 1});
            const at::Tensor weighted = m * weights;
            parts.push_back((hidden * weighted).sum(1) / at::clamp_min(weighted.sum(1), 1e-9));
        } else if (mode == "lasttoken") {
            auto [values, indices] = mask.flip({1}).max(1);
            indices = at::where(values.eq(0), at::full_like(indices, t - 1), indices);
            const at::Tensor last = (t - indices - 1).view({-1, 1, 1}).expand({-1, 1, h});
            const at::Tensor m = mask.unsqueeze(-1).expand_as(hidden).to(hidden.scalar_type());
            parts.push_back(at::gather(hidden * m, 1, last).squeeze(1));
        } else {
            throw UserError("sentence pooling: unknown mode '" + mode + "'");
        }
    }
    at::Tensor e = parts.size() == 1 ? parts.front() : at::cat(parts, -1);
    if (config.normalize) e = e / at::clamp_min(e.norm(2, {-1}, /*keepdim=*/true), 1e-12);
    return e;
}

at::Tensor sentence_embeddings(Model& model, const at::Tensor& ids, const at::Tensor& attention_mask) {
    auto* bert = dynamic_cast<BertModel*>(&model);
    if (!bert)
        throw UserError(model.config().model_type + " is not a sentence encoder (sentence embeddings need a BERT-family model)");
    return pool_sentence_embeddings(bert->encode(ids, attention_mask, at::Tensor()), attention_mask,
                                    model.config().sentence);
}

}  // namespace ql
