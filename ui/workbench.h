// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench: what ties the open project, the current model, the recipe and the running job
// together. It owns the panels (project explorer, model panel, recipe editor, run controls,
// dashboard, compare view, log) and the two background workers (the job runner and the project
// watcher); the main window arranges the panels. Everything that takes time runs off the GUI
// thread; errors become messages in the log and the status bar, never a crash.
#pragma once

#include "engine/core/doctor_report.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>

#include "ui/export_dialog.h"

#include "engine/api/model_api.h"
#include "ui/job_runner.h"
#include "ui/project_watcher.h"

class QWidget;

namespace ql {

class CompareView;
class DashboardView;
class InspectorController;
class LayerInspectorView;
class LogPanel;
class ModelPanel;
class ProjectExplorerPanel;
class RecipeEditor;
class RunControls;
class WhatIfController;
class WhatIfView;

class Workbench : public QObject {
    Q_OBJECT
public:
    explicit Workbench(QWidget* parentWidget);
    ~Workbench() override;

    // --- project ------------------------------------------------------------------------
    // Opens (or, with create, creates) a project file; false with the reason logged on failure.
    bool openProject(const QString& path, bool create = false);
    QString projectPath() const { return m_project; }
    // The built-in demo project: creates it when missing and opens the shipped demo model (no
    // training) with the NVFP4 QAD quick start.
    void openDemo();
    // Trains a new demo model into the cache (retrained_demo_dir()) as a run of the open project
    // (the demo project when none is open), with its curves live in the dashboard; when it
    // completes, opens it by its path. `steps` 0: the full schedule (tests train a few).
    // False (with the reason logged) when another run is in progress.
    bool retrainDemo(qint64 steps = 0);
    static QString demoProjectPath();
    QStringList recentProjects() const;

    // --- model --------------------------------------------------------------------------
    // A folder (HF model or QuantLab checkpoint) or "demo": inspected in the background.
    void openModel(const QString& model);
    QString modelPath() const { return m_model; }

    // --- runs ---------------------------------------------------------------------------
    bool startRun();         // the recipe editor's setup on the current model
    void pauseRun();         // training: cancel after a checkpoint; resumable
    bool resumeSelectedRun();
    void cancelRun();
    void deleteRun(qint64 runId);
    // The export dialog for a completed run, then the export as a job; the file becomes an
    // artifact of the run. `choice` given (tests): no dialog.
    bool exportRun(qint64 runId, const std::optional<ExportChoice>& choice = std::nullopt);

    JobRunner* runner() const { return m_runner; }
    ProjectWatcher* watcher() const { return m_watcher; }
    ProjectExplorerPanel* explorer() const { return m_explorer; }
    ModelPanel* modelPanel() const { return m_modelPanel; }
    RecipeEditor* recipeEditor() const { return m_recipe; }
    RunControls* runControls() const { return m_controls; }
    DashboardView* dashboard() const { return m_dashboard; }
    CompareView* compareView() const { return m_compare; }
    LogPanel* logPanel() const { return m_log; }
    LayerInspectorView* inspector() const { return m_inspector; }
    InspectorController* inspectorController() const { return m_inspectorController; }
    WhatIfView* whatIf() const { return m_whatIf; }
    WhatIfController* whatIfController() const { return m_whatIfController; }
    // The last error shown to the user ("" when none since the last success).
    QString lastError() const { return m_lastError; }
    // The Export Doctor's report on the last export (what exportFinished announced).
    const DoctorReport& lastExportDoctor() const { return m_lastExportDoctor; }

signals:
    void projectOpened(const QString& path);
    void modelOpened(const QString& path);
    void runStarted(qint64 runId);
    // Where the job now running computes ("cuda:0 · BF16", computeDeviceText), or "" when none runs.
    void computeDeviceChanged(const QString& device);
    void statusMessage(const QString& text, int timeoutMs);
    void showDashboardRequested();
    void exportFinished(const QString& path);

private:
    void onRunsChanged(const QVector<RunRow>& runs);
    void onSelectionChanged(const QList<qint64>& ids);
    void onJobFinished(JobRunner::Outcome outcome, const QString& message);
    void replanRecipe();
    void estimateRun(int generation, const QString& fits);
    void report(const QString& error);
    void info(const QString& text);
    void rememberRecent(const QString& path);

    QWidget* m_parentWidget;
    JobRunner* m_runner = nullptr;
    ProjectWatcher* m_watcher = nullptr;
    ProjectExplorerPanel* m_explorer = nullptr;
    ModelPanel* m_modelPanel = nullptr;
    RecipeEditor* m_recipe = nullptr;
    RunControls* m_controls = nullptr;
    DashboardView* m_dashboard = nullptr;
    CompareView* m_compare = nullptr;
    LogPanel* m_log = nullptr;
    LayerInspectorView* m_inspector = nullptr;
    InspectorController* m_inspectorController = nullptr;
    WhatIfView* m_whatIf = nullptr;
    WhatIfController* m_whatIfController = nullptr;
    QString m_project, m_model, m_lastError;
    DoctorReport m_lastExportDoctor;
    QVector<RunRow> m_runs;
    bool m_pausing = false;
    QString m_openAfterJob;  // a model to open when the running job completes (a retrained demo)
    int m_planGeneration = 0;
};

}  // namespace ql
