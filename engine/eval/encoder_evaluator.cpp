// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/eval/encoder_evaluator.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/eval/contrastive_loss.h"
#include "engine/data/sentence_data.h"
#include "engine/eval/rank_statistics.h"
#include "engine/eval/sentence_embedder.h"
#include "engine/formats/tensor_values.h"

namespace ql {
namespace {

// Spearman of the pairs' cosine (rows 2i, 2i + 1) with their scores.
double pair_spearman(const at::Tensor& embeddings, const std::vector<double>& scores) {
    const auto n = static_cast<int64_t>(scores.size());
    const at::Tensor first = embeddings.slice(0, 0, 2 * n, 2), second = embeddings.slice(0, 1, 2 * n, 2);
    return spearman_correlation(to_doubles(row_cosine(first, second)), scores);
}

}  // namespace

std::string encoder_needs_reference_message(const std::string& model) {
    return model +
           " is a sentence encoder: it is evaluated by embedding cosine to a teacher (--teacher T, e.g. the "
           "full-precision model) or by the Spearman correlation on a pairs file (lines sentence1<TAB>sentence2<TAB>score); "
           "give one of them";
}

void add_pair_metrics(EvalReport& into, const EvalReport& pairs) {
    into.overall.spearman = pairs.overall.spearman;
    into.overall.teacher_spearman = pairs.overall.teacher_spearman;
    into.overall.pairs = pairs.overall.pairs;
    into.seconds += pairs.seconds;
}

EvalReport evaluate_encoder(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options,
                            JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    const ModelConfig& c = model.config();
    const std::string name = c.name.empty() ? c.model_type : c.name;
    if (!data.attention_mask.defined())
        throw UserError("data '" + data.name + "': " + name +
                        " is a sentence encoder and reads sentences: a text file (one sentence per line) or a pairs file");
    if (data.size() == 0) throw UserError("data '" + data.name + "': no sentences");
    const bool pairs = !data.pair_scores.empty();
    const bool mlm = c.mlm_head && options.mask_token_id >= 0;
    if (!teacher && !pairs && !mlm && options.encoder_needs_reference) throw UserError(encoder_needs_reference_message(name));
    if (teacher && !teacher->is_encoder())
        throw UserError("the teacher is not a sentence encoder (" + teacher->config().model_type + "); embeddings cannot be compared");

    EvalReport r;
    if (mlm) {
        const Dataset masked = make_masked_lm_dataset(data, options.mask_token_id, options.seed);
        Model* mlm_teacher = teacher && teacher->config().mlm_head ? teacher : nullptr;
        r = evaluate_logits(model, mlm_teacher, masked, options, sink, cancel);
    } else {
        r.overall.loss = std::nan("");
    }
    EvalMetrics& m = r.overall;
    m.examples = data.size();
    m.pairs = static_cast<int64_t>(data.pair_scores.size());
    const at::Tensor embeddings = embed_sentences(model, data, options.batch_size, sink, cancel, "eval");
    if (pairs) m.spearman = pair_spearman(embeddings, data.pair_scores);
    if (!pairs && !mlm && data.size() >= 2) {
        // The held-out form of encoder QAT's loss: each sentence against its deletion view, the
        // rest of its batch the negatives (a last batch of one sentence joins the one before).
        const Dataset view = token_deletion_view(data, options.seed);
        const at::Tensor positives = embed_sentences(model, view, options.batch_size, sink, cancel, "eval views");
        const int64_t n = data.size(), b = std::max<int64_t>(2, options.batch_size > 0 ? options.batch_size : 32);
        double total = 0;
        for (int64_t begin = 0; begin < n;) {
            int64_t end = std::min(n, begin + b);
            if (n - end == 1) end = n;
            total += in_batch_contrastive_loss(embeddings.slice(0, begin, end), positives.slice(0, begin, end)).item<double>() *
                     static_cast<double>(end - begin);
            begin = end;
        }
        m.contrastive_loss = total / static_cast<double>(n);
    }
    if (teacher) {
        const at::Tensor t = embed_sentences(*teacher, data, options.batch_size, sink, cancel, "eval teacher");
        if (t.sizes() != embeddings.sizes())
            throw UserError("the teacher's embeddings have " + std::to_string(t.size(1)) + " values, the model's " +
                            std::to_string(embeddings.size(1)) + " (different pooling or hidden size)");
        const std::vector<double> cos = to_doubles(row_cosine(embeddings, t));
        double sum = 0, lowest = cos.front();
        for (double v : cos) {
            sum += v;
            lowest = std::min(lowest, v);
        }
        m.cosine_mean = sum / static_cast<double>(cos.size());
        m.cosine_p5 = percentile(cos, 5.0);
        m.cosine_min = lowest;
        if (pairs) m.teacher_spearman = pair_spearman(t, data.pair_scores);
    }
    r.domains.clear();
    r.split = split_name(data.split);
    r.pooling = c.sentence.pooling_name() + (c.sentence.normalize ? ", normalized" : "");
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace ql
