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
    // logits of a batch stay near 128 MiB).
    int64_t batch_size = 0;
};

// A data set's inputs as `model` takes them (the MLP reads images as flat vectors).
at::Tensor model_input(const Model& model, const at::Tensor& inputs);

// Runs under inference mode; reports progress(done examples, total, "eval") after every batch
// and checks `cancel` before each. Fills report.overall, report.domains and report.seconds.
EvalReport evaluate(Model& model, Model* teacher, const Dataset& data, const EvalOptions& options, JobSink& sink,
                    const CancellationToken& cancel);

}  // namespace ql
