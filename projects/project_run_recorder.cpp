// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/project_run_recorder.h"

namespace ql::projects {

ProjectRunRecorder::ProjectRunRecorder(const std::filesystem::path& project, const ProjectRunInfo& info, JobSink& forward)
    : project_(project), forward_(forward) {
    std::error_code ec;
    ProjectFile file = std::filesystem::exists(project, ec)
                                     ? ProjectFile::open(project, OpenMode::ReadWrite)
                                     : ProjectFile::create(project);
    if (info.continue_run) {
        file.run(*info.continue_run);  // a UserError naming the run when it does not exist
        run_id_ = *info.continue_run;
    } else {
        RunSpec spec;
        spec.kind = info.kind;
        spec.name = info.name;
        spec.config_json = info.config_json;
        if (!info.model_path.empty()) spec.model_id = file.add_model(info.model_name, info.model_path);
        if (!info.recipe_json.empty()) spec.recipe_id = file.add_recipe(info.recipe_name, info.recipe_json);
        run_id_ = file.create_run(spec);
    }
    writer_ = std::make_unique<MetricWriter>(project_, run_id_, info.writer);
}

ProjectRunRecorder::~ProjectRunRecorder() = default;

void ProjectRunRecorder::progress(int64_t done, int64_t total, const std::string& phase) {
    forward_.progress(done, total, phase);
}

void ProjectRunRecorder::metric(int64_t step, const std::string& name, double value) {
    writer_->append(step, name, value);
    forward_.metric(step, name, value);
}

void ProjectRunRecorder::layer_metric(const std::string& layer, const std::string& name, double value) {
    LayerStats s;
    s.layer = layer;
    s.kind = name;
    s.values = {static_cast<float>(value)};
    writer_->append_layer_stats(std::move(s));
    forward_.layer_metric(layer, name, value);
}

void ProjectRunRecorder::append_layer_stats(std::vector<LayerStats> records) {
    for (projects::LayerStats& s : records) writer_->append_layer_stats(std::move(s));
}

void ProjectRunRecorder::log(LogLevel level, const std::string& text) { forward_.log(level, text); }

void ProjectRunRecorder::artifact(const std::string& kind, const std::string& path) {
    artifacts_.emplace_back(kind, path);
    forward_.artifact(kind, path);
}

void ProjectRunRecorder::finish(RunStatus status, const std::string& message) {
    if (!writer_) return;
    writer_->finish(status, message);
    writer_.reset();
    if (status == RunStatus::Completed && !artifacts_.empty()) {
        ProjectFile file = ProjectFile::open(project_, OpenMode::ReadWrite);
        for (const auto& [kind, path] : artifacts_) file.add_artifact(run_id_, kind, path);
    }
}

void run_recorded(const std::optional<std::string>& project, const ProjectRunInfo& info, JobSink& sink,
                  const std::function<void(JobSink&)>& job, const std::string& cancel_message,
                  const std::function<void(int64_t)>& on_run) {
    if (!project) {
        job(sink);
        return;
    }
    ProjectRunRecorder recorder(*project, info, sink);
    if (on_run) on_run(recorder.run_id());
    try {
        job(recorder);
    } catch (const JobCancelled&) {
        recorder.finish(RunStatus::Cancelled, cancel_message);
        throw;
    } catch (const std::exception& e) {
        recorder.finish(RunStatus::Failed, e.what());
        throw;
    }
    recorder.finish(RunStatus::Completed);
}

}  // namespace ql::projects
