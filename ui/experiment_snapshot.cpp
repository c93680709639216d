// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/experiment_snapshot.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/errors.h"
#include "projects/project_file.h"

namespace ql {

ExperimentSnapshot load_experiment_snapshot(const std::string& project, const std::string& identity_sha256) {
    ExperimentSnapshot snap;
    if (project.empty() || !std::filesystem::exists(project)) return snap;
    const projects::ProjectFile file = projects::ProjectFile::open(project, projects::OpenMode::ReadOnly);
    int64_t id = 0;
    for (const projects::ExperimentRecord& e : file.experiments())
        if (e.identity_sha256 == identity_sha256) id = e.id;
    if (id == 0) return snap;
    snap.report = std::make_shared<projects::ExperimentReport>(projects::load_experiment_report(file, id));
    for (const projects::ExperimentRunRecord& row : file.experiment_runs(id)) {
        ExperimentRunState state;
        state.kind = row.result_json ? ExperimentRunState::Kind::Done
                     : row.claim_pid ? ExperimentRunState::Kind::Claimed
                                     : ExperimentRunState::Kind::Queued;
        state.run_id = row.run_id.value_or(0);
        if (row.run_id) {
            try {
                const projects::RunRecord run = file.run(*row.run_id);
                if (run.started_at && run.ended_at) state.seconds = std::max(0.0, *run.ended_at - *run.started_at);
                if (run.recipe_id) state.recipe_json = file.recipe(*run.recipe_id).json;
            } catch (const UserError&) {
                // The run was deleted from the project; its result stays with the experiment.
            }
        }
        snap.runs[{row.cell, row.replicate}] = std::move(state);
    }
    return snap;
}

double estimated_run_seconds(const experiments::RunParameters& p) {
    // Measured on the shipped demo, 2 shared cores, LibTorch 1.13 (docs/EXPERIMENTS.md "The
    // Experiments view": quantlab-cli experiment run nvfp4-vs-mxfp4 --eval-samples 200 took 1-2 s
    // per PTQ run; qad-vs-qat --steps 10 / 40 --eval-samples 100 took 3 / 12 s per QAT run and
    // 4 / 14 s per QAD run): a PTQ with calibration costs kPtqSeconds plus kEvalSecondsPerSample
    // per held-out problem; a training step of 32 problems kTrainStepSeconds. fp-then-qat's FP
    // steps are taken at the same cost (not measured separately).
    constexpr double kPtqSeconds = 1.0;
    constexpr double kEvalSecondsPerSample = 0.003;
    constexpr double kTrainStepSeconds = 0.33;
    const double eval = kEvalSecondsPerSample * static_cast<double>(p.eval_samples > 0 ? p.eval_samples : 1500);
    const double step = kTrainStepSeconds * static_cast<double>(std::max<int64_t>(1, p.batch_size)) / 32.0;
    double seconds = kPtqSeconds + eval;
    if (p.method == "qat" || p.method == "qad") seconds += 2 * eval + step * static_cast<double>(p.steps);
    if (p.method == "fp-then-qat") seconds += 2 * eval + step * static_cast<double>(p.total_steps);
    // mixed: the sensitivity search before the PTQ, per menu format one PTQ and one 128-example
    // measurement per layer: 13-21 s on the demo with the default menu (CliExperiment.MixedRuns…,
    // 2 shared cores), taken as 20 s.
    if (p.method == "mixed") seconds += 20.0 * static_cast<double>(std::max<std::size_t>(1, p.menu.size() - 1)) / 2.0;
    // Another model: not measured here; all-MiniLM-L6-v2 (22 M parameters against the demo's
    // ~1 M) is taken as ten times the demo until its first runs finish and replace the estimate.
    if (p.model != "demo") seconds *= 10;
    return seconds;
}

}  // namespace ql
