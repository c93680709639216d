// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/evaluator.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/core/nd_array.h"
#include "engine/diagnosis/token_divergence.h"
#include "engine/eval/encoder_evaluator.h"
#include "engine/eval/metrics.h"
#include "engine/formats/tensor_values.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

struct Sums {
    double nll = 0, kl = 0;
    int64_t tokens = 0, examples = 0, exact = 0, agree = 0, correct = 0;
    TokenDivergenceAccumulator divergence;  // per scored token, with a teacher on token data
};

EvalMetrics finish(const Sums& s, const Dataset& data, bool with_teacher) {
    EvalMetrics m;
    m.tokens = s.tokens;
    m.examples = s.examples;
    const double n = static_cast<double>(std::max<int64_t>(1, s.tokens));
    m.loss = s.tokens ? s.nll / n : std::nan("");
    if (data.kind == Dataset::Kind::Tokens) {
        m.ppl = std::exp(m.loss);
        if (data.has_answers) m.exact_match = s.examples ? double(s.exact) / double(s.examples) : std::nan("");
    } else {
        m.accuracy = s.examples ? double(s.correct) / double(s.examples) : std::nan("");
    }
    if (with_teacher) {
        m.kl = s.tokens ? s.kl / n : std::nan("");
        m.agreement = s.tokens ? double(s.agree) / n : std::nan("");
        if (data.kind == Dataset::Kind::Tokens) m.token_divergence = s.divergence.summary();
    }
    return m;
}

}  // namespace

at::Tensor model_input(const Model& model, const at::Tensor& inputs) {
    // The MLP takes flat feature vectors; images arrive as [B, C, H, W].
    if (inputs.dim() == 4 && model.config().architecture == "mlp") return inputs.flatten(1);
    return inputs;
}

at::Tensor forward_batch(Model& model, const Dataset& batch) {
    if (batch.attention_mask.defined())
        return model.forward_padded(on_model_device(model, batch.inputs), on_model_device(model, batch.attention_mask));
    return model.forward(on_model_device(model, model_input(model, batch.inputs)));
}

EvalReport evaluate(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options, JobSink& sink,
                    const CancellationToken& cancel) {
    if (model.is_encoder()) return evaluate_encoder(model, teacher, data, options, sink, cancel);
    return evaluate_logits(model, teacher, data, options, sink, cancel);
}

EvalReport evaluate_logits(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options, JobSink& sink,
                           const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    c10::InferenceMode inference;
    const int64_t n = data.size();
    const bool images = data.kind == Dataset::Kind::Images;
    const int64_t positions = images ? 1 : data.inputs.size(1);
    const int64_t classes = images ? std::max<int64_t>(1, model.config().num_classes)
                                   : std::max<int64_t>(1, model.config().vocab_size);
    int64_t batch = options.batch_size;
    if (batch <= 0) {
        const int64_t tokens = std::clamp<int64_t>((int64_t{1} << 25) / classes, positions, 8192);
        batch = std::max<int64_t>(1, tokens / positions);
    }
    const size_t n_domains = std::max<size_t>(1, data.domain_names.size());
    std::vector<Sums> per_domain(n_domains);
    sink.progress(0, n, "eval");
    for (int64_t begin = 0; begin < n; begin += batch) {
        cancel.throw_if_cancelled();
        // On the model's device: the metrics below compare its logits with the targets there.
        const Dataset b = batch_on_model_device(model, slice_dataset(data, begin, batch));
        const at::Tensor logits = forward_batch(model, b);
        const int64_t expected_dim = images ? 2 : 3;
        // Logits over the classes / vocabulary, not features (an encoder's hidden states would
        // otherwise be read as logits and the targets index past them).
        if (logits.dim() != expected_dim || logits.size(-1) != classes)
            throw UserError(data.name + ": the model gives outputs of shape " + shape_text(logits) + ", not " +
                            (images ? "class logits [batch, " : "token logits [batch, positions, ") + std::to_string(classes) +
                            "]; it cannot be scored by loss on these data");
        const at::Tensor mask = scored_mask(b.targets);
        const std::vector<double> nll = to_doubles(token_nll(logits, b.targets).sum(1));
        const std::vector<double> tokens = to_doubles(mask.sum(1));
        std::vector<double> exact, kl, agree, correct;
        std::vector<std::vector<double>> per_token;  // kl, agree, nll teacher, nll model per position
        if (data.has_answers) exact = to_doubles(exact_match(logits, b.targets));
        if (images) correct = to_doubles(logits.argmax(-1).eq(b.targets));
        if (teacher) {
            const at::Tensor t_logits = forward_batch(*teacher, b);
            if (t_logits.sizes() != logits.sizes())
                throw UserError("teacher outputs " + shape_text(t_logits) + " but the model outputs " + shape_text(logits) +
                                " for the same batch (different vocabulary or classes)");
            const at::Tensor token_kls = token_kl(t_logits, logits), same = top1_agreement(t_logits, logits);
            kl = to_doubles(token_kls.masked_fill(~mask, 0.0).sum(1));
            agree = to_doubles(same.logical_and(mask).sum(1));
            // Per token for the divergence statistics (engine/diagnosis/token_divergence.h).
            if (!images)
                per_token = {to_doubles(token_kls), to_doubles(same), to_doubles(token_nll(t_logits, b.targets)),
                             to_doubles(token_nll(logits, b.targets)), to_doubles(mask)};
        }
        const std::vector<double> dom = data.domains.defined() ? to_doubles(b.domains) : std::vector<double>();
        for (size_t i = 0; i < nll.size(); ++i) {
            Sums& s = per_domain[dom.empty() ? 0 : static_cast<size_t>(dom[i])];
            s.nll += nll[i];
            s.tokens += static_cast<int64_t>(tokens[i]);
            s.examples += 1;
            if (!exact.empty()) s.exact += static_cast<int64_t>(exact[i]);
            if (!correct.empty()) s.correct += static_cast<int64_t>(correct[i]);
            if (teacher) {
                s.kl += kl[i];
                s.agree += static_cast<int64_t>(agree[i]);
            }
            const size_t tp = static_cast<size_t>(positions);
            for (size_t p = i * tp; !per_token.empty() && p < (i + 1) * tp; ++p)
                if (per_token[4][p] != 0)
                    s.divergence.add_token(per_token[0][p], per_token[1][p] != 0, std::exp(-per_token[2][p]),
                                           std::exp(-per_token[3][p]), per_token[2][p], per_token[3][p]);
        }
        sink.progress(std::min(n, begin + batch), n, "eval");
    }
    Sums total;
    for (const Sums& s : per_domain) {
        total.nll += s.nll;
        total.kl += s.kl;
        total.tokens += s.tokens;
        total.examples += s.examples;
        total.exact += s.exact;
        total.agree += s.agree;
        total.correct += s.correct;
        total.divergence.merge(s.divergence);
    }
    EvalReport r;
    r.overall = finish(total, data, teacher != nullptr);
    if (data.domain_names.size() > 1 || (data.domain_names.size() == 1 && data.has_answers))
        for (size_t d = 0; d < data.domain_names.size(); ++d)
            r.domains.emplace_back(data.domain_names[d], finish(per_domain[d], data, teacher != nullptr));
    r.split = split_name(data.split);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace ql
