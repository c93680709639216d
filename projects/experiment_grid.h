// SPDX-License-Identifier: GPL-3.0-or-later
// Makes the planned runs of an experiment as ordinary runs of a project (docs/EXPERIMENTS.md
// "Seeds, pairing and resuming"): claims each cell × replicate in the project file, skips those
// done or being made by another live process, records the run (projects/project_run_recorder.h)
// and its result, and stops between runs when asked. Shared by `quantlab-cli experiment run`
// and the GUI's Experiments view, so both resume and share a grid the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/experiments/experiment_spec.h"
#include "engine/jobs/job.h"
#include "projects/project_file.h"

namespace ql::projects {

// The experiment's row (created when missing, its spec updated) with this invocation's
// environment manifest appended; `invocation` is the command line (or what the GUI ran).
int64_t begin_experiment(ProjectFile& file, const experiments::ExperimentSpec& spec, const std::string& environment_json,
                         const std::vector<std::string>& invocation);

// P.experiments/NAME-ID8 beside the project P.qlab: where the run folders go (CELL/rK).
std::filesystem::path experiment_work_folder(const std::string& project, const experiments::ExperimentSpec& spec);

struct ExperimentGridEvent {
    enum class Kind { Started, Finished, Skipped, Taken };
    Kind kind = Kind::Started;
    std::size_t index = 0;  // into the plan
    int64_t run_id = 0;     // Finished: the project run
    double seconds = 0;     // Finished: how long the run took
};

struct ExperimentGridCounts {
    int64_t ran = 0, skipped = 0, taken = 0;  // made now, already done, being made elsewhere
    double seconds = 0;                       // spent on the runs made now
    bool stopped = false;                     // `stop` was set before the plan ended
};

// Makes every run of `plan` not yet done, in plan order, checking `stop` before each (a run in
// progress finishes). `sink` receives the current run's reports (the recorder forwards them);
// `on_event` (optional) hears each run start, finish or be skipped, on this thread. A failing
// run releases its claim and the exception goes on to the caller (the run is recorded failed).
ExperimentGridCounts run_experiment_grid(ProjectFile& file, const std::string& project, int64_t experiment_id,
                                         const experiments::ExperimentSpec& spec,
                                         const std::vector<experiments::PlannedRun>& plan,
                                         const std::string& environment_json, JobSink& sink, const CancellationToken& stop,
                                         const std::function<void(const ExperimentGridEvent&)>& on_event = {});

}  // namespace ql::projects
