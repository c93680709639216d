// SPDX-License-Identifier: GPL-3.0-or-later
// Runs what the What-if view asks for: the what-if comparison (engine/api/whatif_api.h) of the
// open model with the recipe editor's recipe and calibration data, as a job on the workbench's
// runner (progress, ETA and Cancel in the run bar; not recorded as a project run), and the full
// PTQ / QAD run with the chosen KV-cache format and rotation put into the recipe editor.
#pragma once

#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <functional>

namespace ql {

class JobRunner;
class RecipeEditor;
class WhatIfView;

class WhatIfController : public QObject {
    Q_OBJECT
public:
    // `model` is read when a job starts; `startRun` starts the editor's run (Workbench::startRun).
    WhatIfController(WhatIfView* view, JobRunner* runner, RecipeEditor* recipe, std::function<QString()> model,
                     std::function<bool()> startRun, QObject* parent = nullptr);

    bool compare(const QString& kvCache, const QString& rotation, int samples);
    bool runWithChoice(const QString& kvCache, const QString& rotation, const QString& method);

signals:
    void message(const QString& text, bool isError);

private:
    WhatIfView* m_view;
    JobRunner* m_runner;
    RecipeEditor* m_recipe;
    // The editor's recipe as a file for the engine: a what-if is not a run, so it is written
    // here rather than beside a project (there may be none).
    QTemporaryDir m_recipeDir;
    std::function<QString()> m_model;
    std::function<bool()> m_startRun;
};

}  // namespace ql
