// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluation of a model on a loaded data set, optionally against a teacher (docs/DATA.md
// "Metrics"): loss and perplexity over scored positions, exact match (data with answers),
// accuracy (classifiers), KL(teacher || student) and top-1 agreement with teacher logits computed
// batch by batch beside the student's. Per-domain breakdown for synthetic tasks.
#pragma once

#include "engine/core/eval_report.h"
#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"

namespace ql {

struct EvalOptions {
    // Examples per batch; 0 = about 8192 scored positions, fewer for large vocabularies (the
    // logits of a batch stay near 128 MiB); encoders: 32 sentences.
    int64_t batch_size = 0;
    // Encoders with an MLM head: the [MASK] id and the seed of the masked positions
    // (make_masked_lm_dataset); -1 = no masked-LM loss.
    int64_t mask_token_id = -1;
    uint64_t seed = 0;
    // Encoders: without a teacher, pairs or an MLM head there is nothing to measure; a UserError
    // says what an encoder needs unless this is false (a teacher's own report: empty metrics).
    bool encoder_needs_reference = true;
};

// A data set's inputs as `model` takes them (the MLP reads images as flat vectors).
at::Tensor model_input(const Model& model, const at::Tensor& inputs);

// The model's outputs for a batch of `data`: forward_padded with the batch's attention mask
// (sentences), else forward of model_input.
at::Tensor forward_batch(Model& model, const Dataset& batch);

// Runs under inference mode; reports progress(done examples, total, "eval") after every batch
// and checks `cancel` before each. Fills report.overall, report.domains and report.seconds.
// Encoders (model.is_encoder()) on sentence data: the embedding metrics (encoder_evaluator.h).
// A model whose outputs are not logits over its vocabulary / classes is a UserError.
EvalReport evaluate(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options, JobSink& sink,
                    const CancellationToken& cancel);

// The logit metrics alone (loss, ppl, exact match, accuracy, KL, agreement) for any model whose
// forward gives logits: what evaluate() runs for decoders and classifiers, and for the masked
// tokens of an MLM encoder.
EvalReport evaluate_logits(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options,
                           JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
