// SPDX-License-Identifier: GPL-3.0-or-later
// The tables of an evaluation of several runs (docs/EVAL_SUITES.md "Tables"), the first run the
// baseline (the FP model): success per category with intervals, schema validity and tool-call
// accuracy (compare(), eval_comparison.h, on each run's first replicate), the spread of sampled
// replicates, every flipped item with both outputs and its prompt, the logit metrics on real
// text and how well each predicts the flips across models, what each run costs to serve, and the
// practitioner's checklist ticked from what was measured. Runs made with different settings
// (comparability_problems) are refused unless allowed, and then listed as warnings. Each table
// exports as CSV. Plain C++.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engine/evaluation/eval_comparison.h"
#include "engine/evaluation/evaluation_run.h"
#include "engine/experiments/experiment_statistics.h"

namespace ql::evaluation {

struct CompareRunsOptions {
    BootstrapOptions bootstrap;
    bool allow_mixed_settings = false;  // put runs with different settings side by side anyway
};

// A run's success over its replicates: the mean of the replicates' success rates with its
// Student-t interval (NaN for one replicate), the lowest and highest.
struct ReplicateSpread {
    std::string model;
    experiments::MeanInterval rates;
    double min_rate = 0, max_rate = 0;
};

// One flipped item: its id, category, direction (right_to_wrong / wrong_to_right) and both
// outputs (first replicates), with the prompt the Generate view can be given.
struct FlipRow {
    std::string model, baseline, category, id, direction;
    std::string baseline_output, model_output;
    std::string user_text, messages_json;
};

// Across the runs after the baseline that have logit metrics: Spearman's rank correlation of a
// logit metric with the number of right-to-wrong flips (NaN with fewer than 3 runs or a constant
// column; rank_statistics.h), the runs' values in run order.
struct FlipPredictor {
    std::string metric;   // "delta_ppl", "kl_mean", "kl_p99", "top1_disagreement"
    std::vector<double> values, flips;
    double spearman = 0;
};

// One line of the checklist of docs/EVAL_SUITES.md "Checklist", ticked when the runs measured
// it; `evidence` says what was found (or what is missing).
struct ChecklistEntry {
    std::string item, evidence;
    bool done = false;
};

struct EvaluationTables {
    std::vector<std::string> models;             // labels, baseline first
    EvalComparison stats;                        // compare() of the first replicates
    std::vector<ReplicateSpread> spreads;        // every run
    std::vector<FlipRow> flips;                  // every run after the baseline, suite order
    std::vector<FlipPredictor> predictors;
    std::vector<ChecklistEntry> checklist;
    std::vector<std::string> warnings;           // settings that differ (allowed), labels made unique ...
};

// UserError naming the two runs and every differing setting when runs are not comparable and
// mixing was not allowed; compare()'s UserErrors for runs of different suites or items.
EvaluationTables compare_runs(const std::vector<EvaluationRun>& runs, const CompareRunsOptions& options = {});

// The checklist alone (also for one run).
std::vector<ChecklistEntry> evaluation_checklist(const std::vector<EvaluationRun>& runs, const EvaluationTables* tables);

nlohmann::ordered_json evaluation_tables_json(const EvaluationTables& t);

// CSV tables (RFC 4180, csv_field()), besides summary_csv / paired_csv / flips_csv of
// eval_comparison.h:
//   flip outputs: model,baseline,category,id,direction,baseline_output,model_output,prompt
//   replicates:   model,replicates,mean_rate,ci_low,ci_high,min_rate,max_rate
//   logits:       model,text,windows,window,tokens,ppl,reference,ppl_reference,delta_ppl,kl_mean,kl_p99,top1_agreement
//   predictors:   metric,spearman,values,flips
//   cost:         model,quant_scheme,weight_bytes,bits_per_parameter,code_bytes,scale_bytes,global_scale_bytes,
//                 high_precision_bytes,layout,kv_format,kv_bytes_per_token,prefill_tokens_per_second,ttft_mean_s,
//                 ttft_p50_s,decode_tokens_per_second,device,successes,trials,seconds_per_success
//   kv:           model,kv_format,context,bytes
//   estimates:    model,gpu,bandwidth_bytes_per_s,context,bytes_per_token,estimated_decode_tokens_per_second,
//                 estimated_seconds_per_success
//   manifest:     model,field,value   (every manifest field, one row each)
//   checklist:    item,done,evidence
std::string flip_outputs_csv(const EvaluationTables& t);
std::string replicates_csv(const EvaluationTables& t);
std::string logits_csv(const std::vector<EvaluationRun>& runs);
std::string predictors_csv(const EvaluationTables& t);
std::string cost_csv(const std::vector<EvaluationRun>& runs);
std::string kv_csv(const std::vector<EvaluationRun>& runs);
std::string estimates_csv(const std::vector<EvaluationRun>& runs);
std::string manifest_csv(const std::vector<EvaluationRun>& runs);
std::string checklist_csv(const std::vector<ChecklistEntry>& checklist);

// Every CSV table of an evaluation as (file name, contents): summary.csv, paired.csv, flips.csv,
// flip_outputs.csv, replicates.csv, logits.csv, predictors.csv, cost.csv, kv_cache.csv,
// estimates.csv, manifest.csv, checklist.csv and items_<n>_<label>.csv per run (the first
// replicate's items; a label's characters other than letters, digits, '-', '_' and '.' become '_').
std::vector<std::pair<std::string, std::string>> evaluation_csv_files(const std::vector<EvaluationRun>& runs,
                                                                       const EvaluationTables& t);

}  // namespace ql::evaluation
