// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/sentence_embedder.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/models/model_device.h"
#include "engine/models/sentence_pooling.h"

namespace ql {

at::Tensor embed_sentences(Model& model, const Dataset& data, int64_t batch_size, JobSink& sink,
                           const CancellationToken& cancel, const std::string& phase) {
    if (!model.is_encoder())
        throw UserError(model.config().model_type + " is not a sentence encoder (embeddings need a BERT-family model)");
    if (!data.attention_mask.defined())
        throw UserError("data '" + data.name + "': sentence embeddings need sentences (a text file, one per line)");
    c10::InferenceMode inference;
    const int64_t n = data.size();
    const int64_t bs = batch_size > 0 ? batch_size : kDefaultSentenceBatch;
    // Longest first, ties in data order (sentence-transformers sorts by -length, stable).
    const at::Tensor order = std::get<1>(data.attention_mask.ne(0).sum(1).neg().sort(/*stable=*/true, 0, false));
    std::vector<at::Tensor> parts;
    sink.progress(0, n, phase);
    for (int64_t begin = 0; begin < n; begin += bs) {
        cancel.throw_if_cancelled();
        const at::Tensor rows = order.slice(0, begin, std::min(n, begin + bs));
        Dataset batch = data;
        batch.inputs = data.inputs.index_select(0, rows);
        batch.attention_mask = data.attention_mask.index_select(0, rows);
        batch.targets = data.targets.index_select(0, rows);
        batch = trim_padding(batch);
        // Computed on the model's device, collected on the host (the scores read them there).
        const at::Tensor ids = on_model_device(model, batch.inputs), mask = on_model_device(model, batch.attention_mask);
        parts.push_back(sentence_embeddings(model, ids, mask).to(at::kCPU, at::kFloat));
        sink.progress(std::min(n, begin + bs), n, phase);
    }
    if (parts.empty()) return at::empty({0, 0}, at::kFloat);
    const at::Tensor sorted = at::cat(parts, 0);
    at::Tensor out = at::empty_like(sorted);
    out.index_copy_(0, order, sorted);
    return out;
}

at::Tensor row_cosine(const at::Tensor& a, const at::Tensor& b) {
    if (a.sizes() != b.sizes() || a.dim() != 2) throw UserError("cosine: expected two [N, D] embeddings of one shape");
    const at::Tensor x = a.to(at::kDouble), y = b.to(at::kDouble);
    const at::Tensor dot = (x * y).sum(1);
    const at::Tensor norms = at::clamp_min(x.norm(2, {1}) * y.norm(2, {1}), 1e-8);
    return dot / norms;
}

}  // namespace ql
