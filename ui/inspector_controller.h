// SPDX-License-Identifier: GPL-3.0-or-later
// Runs what the layer inspector shows: the statistics job on the open model with the editor's
// recipe and calibration data (recorded as a "stats" run whose per-layer statistics go into the
// project file), the sensitivity job, the statistics of another checkpoint for the before/after
// overlay, and one channel's statistics. Results reach the view on the GUI thread.
#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QVector>

#include <functional>

#include "ui/divergence_run.h"
#include "ui/project_watcher.h"

namespace ql {

class JobRunner;
class LayerInspectorView;
class RecipeEditor;

class InspectorController : public QObject {
    Q_OBJECT
public:
    // `model` and `project` are read when a job starts (the workbench's current ones).
    InspectorController(LayerInspectorView* view, JobRunner* runner, RecipeEditor* recipe,
                        std::function<QString()> model, std::function<QString()> project, QObject* parent = nullptr);

    bool computeStatistics();
    bool measureSensitivity(double bitsBudget);
    bool computeOverlay(const QString& modelFolder);
    // The importance tab: an imatrix file's statistics (read off the GUI thread), or one collected
    // from the open model on the recipe editor's calibration data (a job, recorded as an
    // "imatrix" run with the file, <project>.runs/imatrix-<time>.gguf, as its artifact).
    void openImportance(const QString& path);
    bool computeImportance();
    void showChannel(const QString& layer, int channel);
    // Depth-wise error and token divergence of the open FP model against the editor's recipe
    // (empty folder) or a checkpoint, recorded as a "divergence" run with its report.
    bool measureDivergence(const QString& checkpointFolder);
    // Held-out examples the divergence job scores (default 512: seconds for the demo on a free
    // machine, and a stable p99).
    void setDivergenceSamples(int samples) { m_divergenceSamples = samples; }
    // The completed divergence runs among `runs` go to the Depth and Tokens tabs, their reports
    // read from the project off the GUI thread (each once).
    void loadDivergenceRuns(const QVector<RunRow>& runs);

signals:
    void message(const QString& text, bool isError);

private:
    QString writeRecipeFile(const QString& stem) const;

    LayerInspectorView* m_view;
    JobRunner* m_runner;
    RecipeEditor* m_recipe;
    std::function<QString()> m_model, m_project;
    QHash<qint64, DivergenceRun> m_divergence;  // reports read so far, by run id
    QString m_divergenceProject;                // the project they came from
    QList<qint64> m_divergenceShown;            // the ids last given to the view
    int m_divergenceSamples = 512;
};

}  // namespace ql
