// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/evalsuite_records.h"

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "projects/project_run_recorder.h"

namespace ql::projects {

int64_t record_evalsuite_run(const std::filesystem::path& project, const EvalsuiteRunRecord& record) {
    ProjectRunInfo info;
    info.kind = kEvalsuiteRunKind;
    info.name = record.label;
    info.model_name = record.model_name;
    info.model_path = record.model_path;
    info.recipe_name = record.recipe_name;
    info.recipe_json = record.recipe_json;
    info.config_json = record.config_json;
    NullJobSink forward;
    ProjectRunRecorder recorder(project, info, forward);
    for (const auto& [name, value] : record.metrics) recorder.metric(0, name, value);
    recorder.append_layer_stats({evalsuite_record(record.run_json)});
    for (const auto& [kind, path] : record.artifacts) recorder.artifact(kind, path);
    recorder.finish(RunStatus::Completed);
    return recorder.run_id();
}

std::vector<StoredEvalsuiteRun> stored_evalsuite_runs(const std::filesystem::path& project) {
    const ProjectFile file = ProjectFile::open(project, OpenMode::ReadOnly);
    std::vector<StoredEvalsuiteRun> out;
    for (const RunRecord& r : file.runs()) {
        if (r.kind != kEvalsuiteRunKind || r.status != RunStatus::Completed) continue;
        const std::optional<std::string> text = evalsuite_run_text(file.layer_stats(r.id, std::string("model")));
        if (!text) continue;
        out.push_back({r.id, r.name, *text, r.created_at});
    }
    return out;
}

std::vector<std::string> evaluations_of_model(const std::filesystem::path& project, const std::string& model_path) {
    namespace fs = std::filesystem;
    // "q", "q/" and "q/." name one folder ("q/." normalises to "q/": the separator is dropped).
    auto normal = [](const std::string& p) {
        fs::path n = fs::absolute(p).lexically_normal();
        if (!n.has_filename() && n.has_parent_path() && n != n.root_path()) n = n.parent_path();
        return n.string();
    };
    const std::string wanted = normal(model_path);
    const ProjectFile file = ProjectFile::open(project, OpenMode::ReadOnly);
    struct Parsed {
        nlohmann::json run, config;
        std::string text;
        double created_at = 0;
    };
    std::vector<Parsed> runs;
    for (const RunRecord& r : file.runs()) {
        if (r.kind != kEvalsuiteRunKind || r.status != RunStatus::Completed) continue;
        const std::optional<std::string> text = evalsuite_run_text(file.layer_stats(r.id, std::string("model")));
        if (!text) continue;
        Parsed p;
        p.run = nlohmann::json::parse(*text, nullptr, false);
        p.config = nlohmann::json::parse(r.config_json, nullptr, false);
        if (!p.run.is_object() || !p.run.contains("manifest") || !p.config.is_object()) continue;
        p.text = *text;
        p.created_at = r.created_at;
        runs.push_back(std::move(p));
    }
    const Parsed* latest = nullptr;
    for (const Parsed& p : runs)
        if (normal(p.run["manifest"].value("model_path", "")) == wanted && (!latest || p.created_at >= latest->created_at)) latest = &p;
    if (!latest) return {};
    const std::string baseline = latest->config.value("baseline", "");
    const std::string suite = latest->run["manifest"].value("suite_sha256", "");
    const Parsed* base = nullptr;
    for (const Parsed& p : runs) {
        if (&p == latest || p.run["manifest"].value("model", "") != baseline || p.run["manifest"].value("suite_sha256", "") != suite ||
            p.created_at > latest->created_at)
            continue;
        if (!base || p.created_at >= base->created_at) base = &p;
    }
    if (!base || normal(base->run["manifest"].value("model_path", "")) == wanted) return {latest->text};
    return {base->text, latest->text};
}

}  // namespace ql::projects
