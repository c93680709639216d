// SPDX-License-Identifier: GPL-3.0-or-later
// Experiments (docs/EXPERIMENTS.md): the facade behind `quantlab-cli experiment` and the GUI.
// The spec, plan, statistics and analysis are the plain types of engine/experiments; this adds
// the one call that makes a planned run (PTQ + eval, or QAT / QAD) and what it measured.
#pragma once

#include <string>

#include "engine/experiments/experiment_analysis.h"
#include "engine/experiments/experiment_spec.h"
#include "engine/experiments/experiment_statistics.h"
#include "engine/experiments/reproducibility_manifest.h"
#include "engine/jobs/job.h"

namespace ql {

struct ExperimentRunOutput {
    experiments::RunResult result;  // cell, replicate and metrics (run_id is the caller's)
    std::string report_json;        // ptq + eval reports, or the train report
};

// Makes `run` in `run_dir` (created; replaced when it exists: a run is redone whole): method
// ptq: PTQ with the recipe, calibrated on `calib` (or `data`) with the run's seed, then evaluated
// against the full-precision model on the validation split of `eval_data` (or `data`); qat / qad:
// PTQ then training (run_training), evaluated before and after. The seed draws the calibration
// samples, the training batches and the held-out problems, so runs of one replicate share their
// problems and pair. An inline recipe is written to run_dir/recipe.json first. Reports through
// `sink`; JobCancelled when `cancel` is set; UserError for bad parameters.
ExperimentRunOutput run_experiment_run(const experiments::PlannedRun& run, const std::string& run_dir, JobSink& sink,
                                       const CancellationToken& cancel);

}  // namespace ql
