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
    // method mixed: the per-layer plan the search made (a QuantLab recipe, docs/RECIPES.md) and
    // its name; the run's recipe in the project. Empty for the other methods.
    std::string plan_name, plan_json;
};

// Makes `run` in `run_dir` (created; replaced when it exists: a run is redone whole): method
// ptq: PTQ with the recipe, calibrated on `calib` (or `data`) with the run's seed, then evaluated
// against the full-precision model on the validation split of `eval_data` (or `data`); qat / qad:
// PTQ then training (run_training), evaluated before and after; mixed: the sensitivity search
// (run_sensitivity) over the menu's formats at the run's budget of bits per parameter, then PTQ
// with its per-layer plan (written to run_dir/plan.json) and eval as for ptq. The seed draws the calibration
// samples, the training batches and the held-out problems, so runs of one replicate share their
// problems and pair. An inline recipe is written to run_dir/recipe.json first. Reports through
// `sink`; JobCancelled when `cancel` is set; UserError for bad parameters. With the run parameter
// `suite`, the run's model then answers the eval suite against the FP model's answers (the
// evalsuite/* metrics; the run's answers in run_dir/evalsuite.json): the FP model answers once per
// experiment, kept in `shared_dir` (a folder every run of the experiment shares, created when
// needed) under a name that holds the model, the suite's hash and the selection.
// Whether `model` (as a run's `model` parameter: "demo", a folder, a .gguf file) is a sentence
// encoder (a BERT: its config.json's model_type, or the GGUF's architecture). Reads the config
// only; false for what it cannot read (the run reports that).
bool model_is_sentence_encoder(const std::string& model);

// Checks, before any run is made, that every cell asks of its model what such a model reports:
// encoder metrics (cosine_*, spearman) of sentence encoders, the token-model metrics (exact_match,
// kl, ...) of the others; a `pairs` file for spearman and only for encoders; sentences, not
// synthetic: data, for encoders (random sentences only as the training data of a QAT / QAD cell
// with sentences to calibrate on and be scored by). UserError naming the experiment file and
// field otherwise.
void check_experiment_models(const experiments::ExperimentSpec& spec);

// Checks, before any run is made, that every cell's recipe fits its model (plan_layer_formats'
// checks: a pattern that matches no layer, such as *mlp* on a BERT encoder, a group size that
// does not divide a layer, a KV cache the model lacks): the recipe of ptq / qat / qad /
// fp-then-qat cells, each menu entry of mixed cells. Loads every model of the grid once, so it is
// called once before a grid starts rather than on every edit of the plan. UserError naming the
// experiment file, the cell, its recipe and field, and the reason.
void check_experiment_recipes(const experiments::ExperimentSpec& spec);

ExperimentRunOutput run_experiment_run(const experiments::PlannedRun& run, const std::string& run_dir, const std::string& shared_dir,
                                       JobSink& sink, const CancellationToken& cancel);

}  // namespace ql
