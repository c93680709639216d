// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluation of a sentence encoder (docs/DATA.md "Encoder metrics"; docs/CLI.md "eval"):
// - with a teacher: the cosine similarity of each sentence's embedding to the teacher's
//   (cosine_mean, cosine_p5, cosine_min);
// - on a pairs file: the Spearman correlation of each pair's embedding cosine with its score,
//   for the model and the teacher (spearman, teacher_spearman);
// - with an MLM head: the masked-LM loss (and KL / agreement to an MLM teacher) on masked copies
//   of the sentences (make_masked_lm_dataset).
// Without any of them nothing can be measured: a UserError says what an encoder needs.
#pragma once

#include "engine/eval/evaluator.h"

namespace ql {

EvalReport evaluate_encoder(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options,
                            JobSink& sink, const CancellationToken& cancel);

// The message of that UserError, for callers that check before loading anything.
std::string encoder_needs_reference_message(const std::string& model);

// Copies the pairs metrics (spearman, teacher_spearman, pairs) of an evaluation on a pairs file
// into `into` (the evaluation on the other data); the times add up.
void add_pair_metrics(EvalReport& into, const EvalReport& pairs);

}  // namespace ql
