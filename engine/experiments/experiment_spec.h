// SPDX-License-Identifier: GPL-3.0-or-later
// An experiment as data (docs/EXPERIMENTS.md): a JSON file or a built-in template naming a base
// run, a grid of values over run parameters, a number of replicate seeds, the metrics to report
// and the comparisons to make. Parsing validates every field (UserError naming the file and
// field); plan_runs expands the grid × replicates into the runs to make. Plain C++ header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ql::experiments {

// One run's parameters: the base merged with one grid cell. Field names are the JSON keys.
struct RunParameters {
    std::string method = "ptq";          // ptq | qat | qad | fp-then-qat (a demo from scratch, or an encoder fine-tuned, then QAT) |
                                         // mixed (the sensitivity search's per-layer plan, then PTQ with it)
    std::string model = "demo";          // HF folder or "demo"
    std::string recipe = "NVFP4_DEFAULT";  // a preset, a recipe file, or (recipe_json set) the inline recipe's name
    std::string recipe_json;             // an inline recipe object of the experiment file ("" = none)
    std::string data = "synthetic:arith";  // training data (qat/qad); calibration data for ptq
    std::string eval_data;               // "" = data's validation split
    std::string eval_split = "validation";  // the part of eval_data (or data) scored: validation | all
    std::string calib;                   // PTQ calibration data ("" = data)
    std::string pairs;                   // sentence encoders: a pairs file scored for spearman ("" = none)
    std::string device = "cpu";          // where every job of the run computes: cpu | cuda | cuda:N (--device)
    int64_t steps = 100;                 // training steps (qat/qad)
    int64_t batch_size = 32;
    int64_t eval_samples = 500;          // 0 = the data's default (1500 synthetic problems)
    int64_t calib_samples = 0;           // 0 = the recipe's
    int64_t fp_steps = 0;                // qat cooldown fusion (TrainRequest::fp_steps)
    int64_t warmup_steps = 0;
    double lr = 1e-4;
    double temperature = 1.0;
    double ce_weight = 0.0;
    std::string schedule = "cosine";
    // fp-then-qat (the qat-fraction template): total_steps of 64 problems, the first
    // (1 − qat_fraction) in full precision training a fresh demo (quantlab-cli demo --steps),
    // the rest QAT with the recipe; qat_bits is the planner's B.
    int64_t total_steps = 0;
    double qat_fraction = 0;
    int64_t qat_bits = 4;
    // mixed: the budget in effective bits per parameter of the whole model (block and global
    // scales counted; what PTQ reports as bits_per_parameter), and the formats the search picks
    // from per layer: NVFP4, FP8, MXFP8, MXFP4, BF16 (BF16 = the layer stays unquantized; it must
    // be listed: the search can always keep a layer in BF16) or any preset / recipe file.
    double bits = 0;
    std::vector<std::string> menu = {"NVFP4", "FP8", "BF16"};
    // An eval suite the run's model answers (docs/EVAL_SUITES.md; "" = none, "default" = the shipped
    // one, or a JSONL file), greedy, against the FP model's answers: the evalsuite/* metrics
    // (docs/EXPERIMENTS.md "Answers"). suite_categories: only these, comma-separated ("" = all);
    // suite_limit: at most this many items of the selection (0 = all).
    std::string suite;
    std::string suite_categories;
    int64_t suite_limit = 0;
};

struct Cell {
    std::string key;                               // "method=qad,recipe=MXFP4": axis=value in axis order
    std::map<std::string, std::string> values;     // axis -> value as written (JSON text for numbers)
    RunParameters parameters;
    std::string parameters_json;                   // the merged parameters, canonical JSON
};

// "a minus b": a and b select cells by some axes' values; each cell matching `a` is compared
// with the cell that differs from it only in those axes, set to b's values.
struct Comparison {
    std::string name;                              // "QAD − QAT"
    std::map<std::string, std::string> a, b;
};

struct ExperimentSpec {
    std::string file;        // where it came from, as errors name it ("e.json", "template qad-vs-qat")
    std::string name;        // [a-z0-9-]+, names the experiment in the project
    std::string title;       // one line for people
    std::string claim;       // what the source found
    std::string source;      // where (paper, blog, docs)
    std::string analysis = "comparisons";  // comparisons | frontier | qat_fraction (how the GUI plots it)
    int64_t replicates = 3;
    uint64_t seed = 0;       // replicate r uses seed + r
    std::vector<std::string> metrics;      // reported, in order; the first is the primary one
    std::vector<std::string> axes;         // grid axes, sorted
    std::vector<Cell> cells;               // the grid, in row-major order of `axes`
    std::vector<Comparison> comparisons;
    std::string canonical_json;            // the spec as parsed (with overrides), sorted keys
    std::string identity_sha256;           // of canonical_json without "replicates": the same
                                           // experiment with more replicates resumes, not restarts
};

struct PlannedRun {
    const Cell* cell = nullptr;  // into the spec's cells
    int64_t replicate = 0;       // 0-based
    uint64_t seed = 0;
};

// Parses the text of an experiment file; `file` names it in errors.
ExperimentSpec parse_experiment(const std::string& json_text, const std::string& file);
// A built-in template's name, or a path to a JSON file.
ExperimentSpec load_experiment(const std::string& template_or_file);

// Command-line overrides, applied before the grid is expanded (they change the identity, except
// replicates). Empty / 0 = keep the file's.
struct ExperimentOverrides {
    int64_t replicates = 0;
    std::string model;
    int64_t steps = 0;
    int64_t eval_samples = 0;
    std::string data;   // every run's data: training, calibration and held-out (base.data; base.calib
                        // and base.eval_data are dropped so that they follow it)
    std::string pairs;  // base.pairs (sentence encoders)
    std::string eval_data;  // base.eval_data: what every run is scored on ("" = the file's, or data's held-out split)
    // base.suite / suite_categories / suite_limit: every run also answers this eval suite ("" = the
    // file's). The metrics gain evalsuite/success, evalsuite/json_valid, evalsuite/right_to_wrong,
    // evalsuite/wrong_to_right and evalsuite/success/<c> for each of suite_metric_categories (the
    // caller reads them from the suite: engine/api/evalsuite_api.h describe_suite).
    std::string suite;
    std::string suite_categories;
    int64_t suite_limit = 0;
    std::vector<std::string> suite_metric_categories;
    // The selection holds json_schema items (describe_suite's json_categories): only then is
    // evalsuite/json_valid among the metrics (a column of "-" otherwise).
    bool suite_has_json = false;
    // base.device for every run (canonical: cpu, cuda:N). "cpu" removes base.device, so that
    // --device cpu is the experiment without the flag (same identity); "" = keep the file's.
    std::string device;
    // The model is a sentence encoder (the caller knows: engine/api/experiment_api.h
    // model_is_sentence_encoder). A template then takes its encoder form (docs/EXPERIMENTS.md
    // "Sentence encoders"): synthetic data become the sentences (data), a part of them and random
    // sentences, budgets an encoder's, the metrics the encoder ones. An experiment file is kept
    // as written (and checked against its model). A template with a language model (not the demo)
    // and text data (not synthetic:) takes its decoder form (docs/EXPERIMENTS.md "Language
    // models"): the held-out text's KL, agreement and loss, fine-tuning budgets.
    bool encoder = false;
};
ExperimentSpec load_experiment(const std::string& template_or_file, const ExperimentOverrides& overrides);

// What a run of a sentence encoder reports (embedding cosine to the FP model; spearman and
// fp_spearman with a pairs file; contrastive_loss), and what only a token model's run reports
// (exact_match, exact_match/<domain>, accuracy, kl, agreement, loss, fp_exact_match, and a suite's
// evalsuite/<name>: sentence encoders do not generate).
// bits_per_parameter, planner_qat_fraction and tokens_per_parameter_byte are both.
bool is_encoder_metric(const std::string& metric);
bool is_token_model_metric(const std::string& metric);

// Every cell × replicate, replicate-major (all cells of replicate 0 first), so a stopped
// experiment has whole replicates of every cell rather than all replicates of a few cells.
std::vector<PlannedRun> plan_runs(const ExperimentSpec& spec);

// Built-in templates (docs/EXPERIMENTS.md "Templates"): names in help order, and their JSON.
std::vector<std::string> experiment_template_names();
// UserError listing the names for an unknown one.
const std::string& experiment_template_json(const std::string& name);

// SHA-256 of bytes, lowercase hex.
std::string sha256_hex(const std::string& bytes);

}  // namespace ql::experiments
