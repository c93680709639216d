// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/experiment_grid.h"

#include <cctype>
#include <chrono>

#include <nlohmann/json.hpp>

#include "engine/api/experiment_api.h"
#include "engine/api/ptq_api.h"
#include "engine/experiments/reproducibility_manifest.h"
#include "projects/project_run_recorder.h"

namespace ql::projects {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string folder_name(const std::string& cell) {
    std::string out;
    for (char c : cell) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    return out;
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int64_t begin_experiment(ProjectFile& file, const experiments::ExperimentSpec& spec, const std::string& environment_json,
                         const std::vector<std::string>& invocation) {
    const int64_t experiment_id = file.ensure_experiment(spec.name, spec.identity_sha256, spec.canonical_json);
    json manifest = json::parse(environment_json);
    manifest["invocation"] = invocation;
    manifest["started_at"] = now_seconds();
    file.append_experiment_manifest(experiment_id, manifest.dump());
    return experiment_id;
}

fs::path experiment_work_folder(const std::string& project, const experiments::ExperimentSpec& spec) {
    return fs::absolute(project).parent_path() / (fs::path(project).stem().string() + ".experiments") /
           (spec.name + "-" + spec.identity_sha256.substr(0, 8));
}

ExperimentGridCounts run_experiment_grid(ProjectFile& file, const std::string& project, int64_t experiment_id,
                                         const experiments::ExperimentSpec& spec,
                                         const std::vector<experiments::PlannedRun>& plan,
                                         const std::string& environment_json, JobSink& sink, const CancellationToken& stop,
                                         const std::function<void(const ExperimentGridEvent&)>& on_event) {
    auto tell = [&](ExperimentGridEvent::Kind kind, std::size_t index, int64_t run_id = 0, double seconds = 0) {
        if (on_event) on_event(ExperimentGridEvent{kind, index, run_id, seconds});
    };
    const fs::path work = experiment_work_folder(project, spec);
    const CancellationToken never;  // a run, once started, finishes: stopping is between runs
    ExperimentGridCounts counts;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        if (stop.cancelled()) {
            counts.stopped = true;
            break;
        }
        const experiments::PlannedRun& run = plan[i];
        const ExperimentClaim claim =
            file.claim_experiment_run(experiment_id, run.cell->key, run.replicate, static_cast<int64_t>(run.seed));
        if (claim == ExperimentClaim::Done) {
            ++counts.skipped;
            tell(ExperimentGridEvent::Kind::Skipped, i);
            continue;
        }
        if (claim == ExperimentClaim::Taken) {
            ++counts.taken;
            tell(ExperimentGridEvent::Kind::Taken, i);
            continue;
        }
        const experiments::RunParameters& params = run.cell->parameters;
        ProjectRunInfo info;
        info.kind = params.method;
        info.name = spec.name + " " + run.cell->key + " #" + std::to_string(run.replicate);
        info.model_name = params.model;
        info.model_path = resolved_model_folder(params.model);
        // A mixed run's recipe is the plan its search makes (set when the run finishes); the
        // manifest's recipe hash is then that of the search's inputs (the cell's parameters).
        if (params.method == "mixed")
            info.recipe_name.clear(), info.recipe_json.clear();
        else if (!params.recipe_json.empty())
            info.recipe_name = params.recipe, info.recipe_json = params.recipe_json;
        else
            std::tie(info.recipe_name, info.recipe_json) = recipe_name_and_json(params.recipe);
        const std::string data = params.method == "ptq" && !params.calib.empty() ? params.calib : params.data;
        info.config_json = json({{"experiment", spec.name},
                                 {"experiment_id", experiment_id},
                                 {"cell", run.cell->key},
                                 {"replicate", run.replicate},
                                 {"seed", run.seed},
                                 {"parameters", json::parse(run.cell->parameters_json)},
                                 {"manifest",
                                  {{"seed", run.seed},
                                   {"recipe_sha256", experiments::sha256_hex(params.method == "mixed" ? run.cell->parameters_json
                                                                                                     : info.recipe_json)},
                                   {"data", data},
                                   {"data_sha256", experiments::data_sha256(data)},
                                   {"eval_data", params.eval_data.empty() ? params.data : params.eval_data},
                                   {"environment", json::parse(environment_json)}}}})
                               .dump();
        const std::string run_dir = (work / folder_name(run.cell->key) / ("r" + std::to_string(run.replicate))).string();
        tell(ExperimentGridEvent::Kind::Started, i);
        const auto t0 = std::chrono::steady_clock::now();
        ExperimentRunOutput out;
        int64_t run_id = 0;
        try {
            run_recorded(
                project, info, sink, [&](JobSink& recorder) { out = run_experiment_run(run, run_dir, work.string(), recorder, never); }, {},
                [&](int64_t id) {
                    run_id = id;
                    file.set_experiment_run_id(experiment_id, run.cell->key, run.replicate, id);
                });
        } catch (...) {
            file.release_experiment_run(experiment_id, run.cell->key, run.replicate);
            throw;
        }
        if (!out.plan_json.empty()) file.set_run_recipe(run_id, out.plan_name, out.plan_json);
        const json result = {{"metrics", out.result.metrics}, {"examples", out.result.examples}, {"run_id", run_id}};
        file.set_experiment_run_result(experiment_id, run.cell->key, run.replicate, result.dump());
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        counts.seconds += seconds;
        ++counts.ran;
        tell(ExperimentGridEvent::Kind::Finished, i, run_id, seconds);
    }
    return counts;
}

}  // namespace ql::projects
