// SPDX-License-Identifier: GPL-3.0-or-later
// An evaluation run of an eval suite (engine/evaluation/evaluation_run.h, docs/EVAL_SUITES.md) as
// a project run: one run of kind "evalsuite" per model evaluated, named after its label, with its
// model and recipe, scalar metrics (evalsuite/success, evalsuite/kl_mean ...) and one
// layer-statistics row of kind "evalsuite_run", layer "model", whose JSON column holds the whole
// run as evaluation_run_json writes it (manifest, answers, prompts, logit metrics, serving cost).
// quantlab-cli evalsuite --project and the GUI's Evaluation view store runs this way; the
// Evaluation view and the HTML report read them back. Plain C++ (no engine types: JSON text).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "projects/layer_stats.h"

namespace ql::projects {

inline constexpr const char* kEvalsuiteRunKind = "evalsuite";
inline constexpr const char* kEvalsuiteRecordKind = "evalsuite_run";

// `run_json`: the evaluation run's JSON text (validated when the record is written).
inline LayerStats evalsuite_record(const std::string& run_json) {
    LayerStats s;
    s.layer = "model";
    s.kind = kEvalsuiteRecordKind;
    s.outliers_json = run_json;
    return s;
}

// The run's JSON text among a run's records (the last one when there are several).
inline std::optional<std::string> evalsuite_run_text(const std::vector<LayerStats>& records) {
    std::optional<std::string> text;
    for (const LayerStats& s : records)
        if (s.kind == kEvalsuiteRecordKind) text = s.outliers_json;
    return text;
}

struct EvalsuiteRunRecord {
    std::string label;                     // the run's name in the project
    std::string model_name, model_path;    // the model (hashed into the project's models)
    std::string recipe_name, recipe_json;  // "" when not quantized
    std::string config_json = "{}";        // the request (suite, decoding, text ...)
    std::string run_json;                  // evaluation_run_json(...) text
    std::vector<std::pair<std::string, double>> metrics;  // at step 0
    std::vector<std::pair<std::string, std::string>> artifacts;  // (kind, path): saved run files
};

// Adds one completed run of kind "evalsuite" to `project` (created when missing); returns its id.
int64_t record_evalsuite_run(const std::filesystem::path& project, const EvalsuiteRunRecord& record);

// Every completed evalsuite run of the project with its JSON text, by run id.
struct StoredEvalsuiteRun {
    int64_t run_id = 0;
    std::string name, json;
    double created_at = 0;
};
std::vector<StoredEvalsuiteRun> stored_evalsuite_runs(const std::filesystem::path& project);

// The evaluation of `model_path` (a checkpoint folder or model file, compared after making both
// absolute and normal) the project holds, as JSON texts for a report: its latest evalsuite run
// and, first, the baseline it was compared with (the latest run before it of the baseline model
// its config names, on the same suite). Empty when the project has none.
std::vector<std::string> evaluations_of_model(const std::filesystem::path& project, const std::string& model_path);

}  // namespace ql::projects
