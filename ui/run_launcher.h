// SPDX-License-Identifier: GPL-3.0-or-later
// Turns a RunSetup into an engine job and its project record: PTQ (then an evaluation against the
// FP model, so every run has comparable accuracy and KL), QAT or QAD (run_training, which
// evaluates before, every N steps and after). Output folders go beside the project file, in
// "<project>.runs/<kind>-<time>/". A paused run is resumed from its checkpoint in the same folder
// and continues the same project run.
#pragma once

#include <QString>

#include <optional>

#include "projects/project_run_recorder.h"
#include "ui/job_runner.h"
#include "ui/run_setup.h"

namespace ql {

struct LaunchPlan {
    QString title;
    JobRunner::Job job;
    projects::ProjectRunInfo info;
    QString outDir;
    QString device;  // where it computes (computeDeviceText), for the status bar
};

// `model`: a folder or "demo"; `project`: the project file. Writes the composed recipe to a
// file in the output folder's parent (the job reads it from there). Throws std::runtime_error
// when the folder cannot be created.
LaunchPlan planRun(const RunSetup& setup, const QString& model, const QString& project);

// The plan that continues run `runId` (paused, cancelled or interrupted) from the settings and
// output folder stored with it; std::runtime_error when it cannot be resumed (PTQ runs, no
// checkpoint).
LaunchPlan planResume(qint64 runId, const QString& configJson);

// The quantized checkpoint a run wrote (ptq: its output folder; qat/qad: <out>/model), from the
// config stored with it (the GUI's and quantlab-cli's alike); "" when the run names none.
QString runModelFolder(const QString& kind, const QString& configJson);

}  // namespace ql
