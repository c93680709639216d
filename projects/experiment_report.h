// SPDX-License-Identifier: GPL-3.0-or-later
// An experiment's result as the project holds it: the spec, the finished runs, their analysis
// and the reproducibility manifest, for `experiment run` / `experiment show` (docs/CLI.md) and the
// GUI's Experiments view alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api/experiment_api.h"
#include "projects/project_file.h"

namespace ql::projects {

// Not copyable: `result` points into `spec`'s cells (moving keeps them valid).
struct ExperimentReport {
    ExperimentRecord record;
    experiments::ExperimentSpec spec;
    std::vector<experiments::RunResult> runs;
    experiments::ExperimentResult result;
    nlohmann::json run_manifests = nlohmann::json::array();  // per finished run: seed, hashes, environment
    std::size_t planned_runs = 0;

    ExperimentReport() = default;
    ExperimentReport(ExperimentReport&&) = default;
    ExperimentReport& operator=(ExperimentReport&&) = default;
    ExperimentReport(const ExperimentReport&) = delete;
    ExperimentReport& operator=(const ExperimentReport&) = delete;
};

// The experiment `name_or_spec` names: an experiment name in the project (its latest), else a
// file or template whose identity the project holds. UserError naming the project otherwise.
int64_t find_experiment(const ProjectFile& file, const std::string& name_or_spec);

ExperimentReport load_experiment_report(const ProjectFile& file, int64_t experiment_id);

// The stable JSON form (docs/CLI.md "experiment").
nlohmann::json experiment_report_json(const ExperimentReport& report);
std::string experiment_report_text(const ExperimentReport& report);

// Cell metrics whose mean in `here` lies outside the 95 % interval of the same cell in `other`
// (a rerun on another machine): [{cell, metric, mean, other_mean, other_ci_low, other_ci_high}].
nlohmann::json cells_outside_intervals(const ExperimentReport& here, const ExperimentReport& other);

}  // namespace ql::projects
