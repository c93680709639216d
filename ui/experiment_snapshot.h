// SPDX-License-Identifier: GPL-3.0-or-later
// What the Experiments view shows of an experiment, read from the project file in one go (on a
// worker thread): its result (projects/experiment_report.h: the engine's statistics), the state
// of every cell × replicate, how long the finished runs took and the recipe each run used. Plain
// C++ (no Qt), so it is read off the GUI thread and handed over whole.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "engine/experiments/experiment_spec.h"
#include "projects/experiment_report.h"

namespace ql {

struct ExperimentRunState {
    enum class Kind { Queued, Claimed, Done };
    Kind kind = Kind::Queued;
    int64_t run_id = 0;     // the project run (Claimed: once it exists; Done: always)
    double seconds = 0;     // Done: how long the run took (its start to its end); 0 if unknown
    std::string recipe_json;  // the recipe the run was made with ("" before it exists)
};

struct ExperimentSnapshot {
    // The result; null when the project holds no run of this experiment (identity) yet.
    std::shared_ptr<projects::ExperimentReport> report;
    std::map<std::pair<std::string, int64_t>, ExperimentRunState> runs;  // (cell key, replicate)
};

// Reads the experiment whose identity is `identity_sha256` from `project`; an empty snapshot
// when the file does not exist or holds no such experiment. UserError for a damaged file.
ExperimentSnapshot load_experiment_snapshot(const std::string& project, const std::string& identity_sha256);

// How long one run of `p` takes, in seconds, on this machine's CPU before any has finished:
// the demo's measured costs (docs/EXPERIMENTS.md "The Experiments view"), so the plan shows a
// time before it starts; once runs finish the view uses their measured times instead.
double estimated_run_seconds(const experiments::RunParameters& p);

}  // namespace ql
