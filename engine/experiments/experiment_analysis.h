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

struct ExperimentResult {
    std::vector<CellSummary> cells;       // cells with at least one finished run
    std::vector<ComparisonSummary> comparisons;
};

ExperimentResult analyse(const ExperimentSpec& spec, const std::vector<RunResult>& runs, double confidence = 0.95);

// The stable --json form (docs/CLI.md "experiment"); NaN bounds are null.
std::string result_json(const ExperimentSpec& spec, const ExperimentResult& result);
// A plain-text table for people.
std::string result_text(const ExperimentSpec& spec, const ExperimentResult& result);

}  // namespace ql::experiments
