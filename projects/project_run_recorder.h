// SPDX-License-Identifier: GPL-3.0-or-later
// Records one job as a run of a project file: the model and recipe, the run with its config,
// every metric and per-layer metric the job reports (MetricWriter, so a GUI can watch it live),
// the artifacts it produced and how it ended. The file is created when missing. Forwards every
// report to another sink as well (the CLI's printer, the GUI's live view). Used alike by
// `quantlab-cli … --project P.qlab` and the GUI, so both record runs the same way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/jobs/job.h"
#include "projects/metric_writer.h"
#include "projects/project_file.h"

namespace ql::projects {

struct ProjectRunInfo {
    std::string kind;           // "ptq", "eval" ...
    std::string name;           // shown in the project
    std::string model_name, model_path;
    std::string recipe_name, recipe_json;  // recipe_json empty: no recipe
    std::string config_json = "{}";
    // Set: continue this existing run (a paused = cancelled, or interrupted one) instead of
    // creating a new one; its metric series go on where they stopped.
    std::optional<std::int64_t> continue_run;
    MetricWriter::Options writer;  // e.g. a shorter flush interval for a live GUI
};

class ProjectRunRecorder : public JobSink {
public:
    ProjectRunRecorder(const std::filesystem::path& project, const ProjectRunInfo& info, JobSink& forward);
    ~ProjectRunRecorder() override;  // without finish(): the run is recorded as interrupted

    void progress(int64_t done, int64_t total, const std::string& phase) override;
    void metric(int64_t step, const std::string& name, double value) override;
    void layer_metric(const std::string& layer, const std::string& name, double value) override;
    void log(LogLevel level, const std::string& text) override;
    void artifact(const std::string& kind, const std::string& path) override;

    // Records beyond per-layer scalars (histograms, scales: projects/layer_stats_records.h).
    void append_layer_stats(std::vector<LayerStats> records);

    void finish(RunStatus status, const std::string& message = {});
    int64_t run_id() const { return run_id_; }

private:
    std::filesystem::path project_;
    JobSink& forward_;
    int64_t run_id_ = 0;
    std::unique_ptr<MetricWriter> writer_;
    std::vector<std::pair<std::string, std::string>> artifacts_;
};

// Runs `job` with `sink`, recorded as a run of `project` when one is given: the run ends
// completed, cancelled (with `cancel_message`) or failed (with the error), and the exception
// goes on to the caller. `on_run` (optional) learns the run id once the run exists.
void run_recorded(const std::optional<std::string>& project, const ProjectRunInfo& info, JobSink& sink,
                  const std::function<void(JobSink&)>& job, const std::string& cancel_message = {},
                  const std::function<void(int64_t)>& on_run = {});

}  // namespace ql::projects
