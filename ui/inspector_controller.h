// SPDX-License-Identifier: GPL-3.0-or-later
// Runs what the layer inspector shows: the statistics job on the open model with the editor's
// recipe and calibration data (recorded as a "stats" run whose per-layer statistics go into the
// project file), the sensitivity job, the statistics of another checkpoint for the before/after
// overlay, and one channel's statistics. Results reach the view on the GUI thread.
#pragma once

#include <QObject>
#include <QString>

#include <functional>

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

signals:
    void message(const QString& text, bool isError);

private:
    QString writeRecipeFile(const QString& stem) const;

    LayerInspectorView* m_view;
    JobRunner* m_runner;
    RecipeEditor* m_recipe;
    std::function<QString()> m_model, m_project;
};

}  // namespace ql
