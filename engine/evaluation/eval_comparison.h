// SPDX-License-Identifier: GPL-3.0-or-later
// The statistics of eval-suite results (docs/EVAL_SUITES.md "Metrics"): each model's success
// per category with Wilson intervals, its schema-validity rate and tool-call name and argument
// accuracy; and each model against a baseline (the FP model) on the same items: answer flips
// with their item ids, McNemar's exact test on the discordant pairs, and a paired bootstrap
// interval on the difference of success rates, per category and overall. Binomial intervals come
// from engine/experiments/experiment_statistics.h. Plain C++.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/evaluation/eval_results.h"
#include "engine/experiments/experiment_statistics.h"

namespace ql::evaluation {

// successes of trials, the rate and its Wilson score interval; rate and interval are NaN for no
// trials (JSON null, CSV empty).
struct RateInterval {
    int64_t successes = 0, trials = 0;
    double rate = 0;
    experiments::Interval ci;
};
RateInterval rate_interval(int64_t successes, int64_t trials, double confidence = 0.95);

struct ModelSummary {
    std::string model;
    RateInterval overall;
    std::vector<std::pair<std::string, RateInterval>> categories;   // in order of first appearance
    RateInterval json_valid;      // items with a json_schema check: JSON found and schema-valid
    RateInterval tool_name;       // items with a tool_call check: the right function
    RateInterval tool_arguments;  // ... its arguments valid and as expected
    // Instruction constraints by kind (each constraint of each instructions item is one trial).
    std::vector<std::pair<std::string, RateInterval>> constraints;
    // Adversarial variants by kind ("typo" ...): success on the variant items of that kind, and
    // consistency: of the variants whose original item passed, how many passed too.
    std::vector<std::pair<std::string, RateInterval>> variants;
    std::vector<std::pair<std::string, RateInterval>> variant_consistency;
};
ModelSummary summarize(const ModelEvalReport& report, double confidence = 0.95);

struct BootstrapOptions {
    int64_t resamples = 2000;
    uint64_t seed = 38;
    double confidence = 0.95;
};

// One model against the baseline on a set of items (a category, or "overall" for all).
struct PairedTable {
    std::string category;
    int64_t items = 0;
    int64_t both_right = 0, right_to_wrong = 0, wrong_to_right = 0, both_wrong = 0;
    std::vector<std::string> right_to_wrong_ids, wrong_to_right_ids;  // in suite order
    double baseline_rate = 0, model_rate = 0;
    double difference = 0;          // model_rate - baseline_rate
    experiments::Interval bootstrap;  // paired bootstrap percentile interval of `difference`
    // McNemar's exact test: two-sided binomial p-value of the discordant pairs under p = 1/2,
    // min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2); 1 when there are none.
    double mcnemar_p = 1;
};

struct ModelComparison {
    std::string model, baseline;
    PairedTable overall;
    std::vector<PairedTable> categories;  // the baseline's category order
};

struct EvalComparison {
    std::string suite_sha256;
    BootstrapOptions bootstrap;
    std::vector<ModelSummary> summaries;        // every report, baseline first
    std::vector<ModelComparison> comparisons;   // every other report against the baseline
};

// reports[0] is the baseline. All reports must come from the same suite (equal sha256) and hold
// the same item ids; UserError naming the model and the first differing id otherwise. Items are
// paired by id.
EvalComparison compare(const std::vector<ModelEvalReport>& reports, const BootstrapOptions& options = {});

// The paired bootstrap (exposed for tests): `baseline` and `model` are 0/1 outcomes of the same
// items. Each of options.resamples resamples draws items.size() indices uniformly with
// replacement and takes the mean of model[i] - baseline[i]; the interval is the
// ((1 - c) / 2, (1 + c) / 2) percentiles of those means by linear interpolation between order
// statistics (numpy.percentile's default: r = q (B - 1)). Indices come from the splitmix64 stream
// seeded with `stream_seed` (state s, outputs mix64(s + k * 0x9E3779B97F4A7C15), k = 0, 1, ...,
// engine/data/synthetic_tasks.h), reduced to [0, n) by Lemire's multiply-shift with rejection.
// NaN interval for no items.
experiments::Interval paired_bootstrap_interval(const std::vector<uint8_t>& baseline, const std::vector<uint8_t>& model,
                                                int64_t resamples, uint64_t stream_seed, double confidence);

double mcnemar_exact_p(int64_t right_to_wrong, int64_t wrong_to_right);

// JSON: {"suite_sha256", "bootstrap": {"resamples", "seed", "confidence"}, "summaries": [...],
// "comparisons": [...]}; NaN as null.
nlohmann::ordered_json comparison_json(const EvalComparison& c);

// CSV tables (RFC 4180, csv_field()):
//   summary:  model,table,name,successes,trials,rate,ci_low,ci_high
//             (table: overall, category, json_valid, tool_name, tool_arguments, constraint,
//             variant, variant_consistency)
//   paired:   model,baseline,category,items,both_right,right_to_wrong,wrong_to_right,both_wrong,
//             baseline_rate,model_rate,difference,ci_low,ci_high,mcnemar_p
//   flips:    model,baseline,category,id,direction   (right_to_wrong / wrong_to_right)
std::string summary_csv(const EvalComparison& c);
std::string paired_csv(const EvalComparison& c);
std::string flips_csv(const EvalComparison& c);

}  // namespace ql::evaluation
