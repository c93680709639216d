// SPDX-License-Identifier: GPL-3.0-or-later
// From the finished runs of an experiment to its result (docs/EXPERIMENTS.md "Result"): per
// cell and metric the mean with its 95 % interval over replicates, per comparison and metric the
// paired difference with its interval; with a single replicate the exact-match rate gets its
// binomial (Wilson) interval and a difference Newcombe's. Plain C++ header.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/experiments/experiment_spec.h"
#include "engine/experiments/experiment_statistics.h"

namespace ql::experiments {

// What one finished run measured.
struct RunResult {
    std::string cell;          // Cell::key
    int64_t replicate = 0;
    int64_t run_id = 0;        // in the project
    std::map<std::string, double> metrics;  // "exact_match", "kl", "exact_match/+" ... (those that apply)
    int64_t examples = 0;      // problems scored (the binomial interval's trials)
};

struct MetricSummary {
    std::string metric;
    MeanInterval value;        // n replicates; ci NaN when it cannot be given
    std::string interval;      // "t" (over replicates), "wilson" (one run, a rate), "none"
    std::vector<double> values;  // per replicate, in replicate order
};

struct CellSummary {
    const Cell* cell = nullptr;
    std::vector<int64_t> run_ids;
    std::vector<MetricSummary> metrics;  // in the spec's metric order, those the runs reported
};

struct ComparisonSummary {
    const Comparison* comparison = nullptr;
    std::string a, b;                    // the two cells' keys
    std::vector<MetricSummary> metrics;  // value.mean = mean of a − b; interval "paired t", "newcombe", "none"
};

// fp-then-qat cells (the qat-fraction study): per token budget (the cells that differ only in
// qat_fraction), the quadratic fit of the mean loss over the QAT fraction
// (fit_qat_fraction_curve, engine/core/qat_plan.h) and its optimum, beside the planner's f̂.
struct QatFractionOptimum {
    std::string group;                 // the cells' other axes, "total_steps=200" ("base": none)
    int64_t total_steps = 0;
    std::vector<std::pair<double, double>> points;  // (qat_fraction, mean loss), by fraction
    bool fitted = false;               // false: fewer than 3 fractions measured (note says so)
    std::string note;
    bool convex = false;               // the fit has an interior minimum
    double optimum_fraction = 0;       // argmin of the fit within the measured fractions
    double optimum_loss = 0, rms_residual = 0;
    std::optional<double> planner_fraction;  // mean of the runs' planner_qat_fraction, when reported
};

struct ExperimentResult {
    std::vector<CellSummary> cells;       // cells with at least one finished run
    std::vector<ComparisonSummary> comparisons;
    std::vector<QatFractionOptimum> qat_fraction_optima;  // fp-then-qat cells with a loss only
};

// The measured optimum per budget from cell summaries (what analyse fills in): cells of method
// fp-then-qat with a "loss" metric (a sentence encoder: contrastive_loss), grouped by their values
// other than qat_fraction.
std::vector<QatFractionOptimum> qat_fraction_optima(const std::vector<CellSummary>& cells);

ExperimentResult analyse(const ExperimentSpec& spec, const std::vector<RunResult>& runs, double confidence = 0.95);

// The stable --json form (docs/CLI.md "experiment"); NaN bounds are null.
std::string result_json(const ExperimentSpec& spec, const ExperimentResult& result);
// A plain-text table for people.
std::string result_text(const ExperimentSpec& spec, const ExperimentResult& result);

}  // namespace ql::experiments
