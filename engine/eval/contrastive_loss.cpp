// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/contrastive_loss.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <vector>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"

namespace ql {
namespace {

// sentence_transformers.util.cos_sim: both sides normalized (torch.nn.functional.normalize,
// eps 1e-12), then a @ b.T -> [B, B].
at::Tensor cosine_matrix(const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor an = a / at::clamp_min(a.norm(2, {1}, true), 1e-12);
    const at::Tensor bn = b / at::clamp_min(b.norm(2, {1}, true), 1e-12);
    return at::matmul(an, bn.transpose(0, 1));
}

void check_pair(const at::Tensor& anchors, const at::Tensor& positives) {
    if (anchors.dim() != 2 || anchors.sizes() != positives.sizes())
        throw UserError("contrastive loss: anchors and positives must both be [batch, dimension] of one shape, got " +
                        std::to_string(anchors.dim()) + "-D and " + std::to_string(positives.dim()) + "-D");
    if (anchors.size(0) < 2)
        throw UserError("contrastive loss: needs at least 2 sentences per batch (the others are each one's negatives)");
}

}  // namespace

at::Tensor in_batch_contrastive_loss(const at::Tensor& anchors, const at::Tensor& positives, double scale) {
    check_pair(anchors, positives);
    const at::Tensor scores = cosine_matrix(anchors, positives) * scale;
    const at::Tensor labels = at::arange(anchors.size(0), anchors.options().dtype(at::kLong));
    return at::cross_entropy_loss(scores.to(at::kFloat), labels);
}

double in_batch_top1(const at::Tensor& anchors, const at::Tensor& positives) {
    check_pair(anchors, positives);
    c10::NoGradGuard no_grad;
    const at::Tensor best = cosine_matrix(anchors.detach(), positives.detach()).argmax(1);
    const at::Tensor own = at::arange(anchors.size(0), best.options());
    return best.eq(own).to(at::kDouble).mean().item<double>();
}

Dataset token_deletion_view(const Dataset& sentences, uint64_t seed, double rate, int64_t pad_id) {
    if (!sentences.attention_mask.defined())
        throw UserError("data '" + sentences.name + "': a deletion view needs sentences (with an attention mask)");
    if (!(rate >= 0.0 && rate < 1.0)) throw UserError("deletion view: the rate must be in [0, 1), got " + std::to_string(rate));
    const at::Tensor ids = sentences.inputs.to(at::kCPU, at::kLong).contiguous();
    const at::Tensor mask = sentences.attention_mask.to(at::kCPU, at::kLong).contiguous();
    const int64_t n = ids.size(0), t = ids.size(1);
    const int64_t* id = ids.data_ptr<int64_t>();
    const int64_t* m = mask.data_ptr<int64_t>();
    std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n));
    int64_t longest = 1;
    const uint64_t base = mix64(seed);
    for (int64_t r = 0; r < n; ++r) {
        std::vector<int64_t> real;
        for (int64_t p = 0; p < t; ++p)
            if (m[r * t + p] != 0) real.push_back(id[r * t + p]);
        std::vector<int64_t>& out = rows[static_cast<size_t>(r)];
        const auto len = static_cast<int64_t>(real.size());
        for (int64_t p = 0; p < len; ++p) {
            const bool end = p == 0 || p == len - 1;
            const double u = static_cast<double>(mix64(base ^ mix64(static_cast<uint64_t>(r) << 32 | static_cast<uint64_t>(p)))) /
                             18446744073709551616.0;
            if (end || u >= rate) out.push_back(real[static_cast<size_t>(p)]);
        }
        if (len >= 3 && static_cast<int64_t>(out.size()) == 2) out.insert(out.begin() + 1, real[1]);
        longest = std::max<int64_t>(longest, static_cast<int64_t>(out.size()));
    }
    std::vector<int64_t> view(static_cast<size_t>(n * longest), pad_id), view_mask(static_cast<size_t>(n * longest), 0);
    for (int64_t r = 0; r < n; ++r)
        for (size_t p = 0; p < rows[static_cast<size_t>(r)].size(); ++p) {
            view[static_cast<size_t>(r * longest) + p] = rows[static_cast<size_t>(r)][p];
            view_mask[static_cast<size_t>(r * longest) + p] = 1;
        }
    Dataset d = sentences;
    d.inputs = at::tensor(view, at::kLong).reshape({n, longest}).to(sentences.inputs.device());
    d.attention_mask = at::tensor(view_mask, at::kLong).reshape({n, longest}).to(sentences.inputs.device());
    d.targets = at::full({n, longest}, Dataset::kIgnoreIndex, d.inputs.options());
    d.name = sentences.name + " (deletion view)";
    return d;
}

}  // namespace ql
