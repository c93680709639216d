// SPDX-License-Identifier: GPL-3.0-or-later
// The result half of the Experiments view: the chosen metric's plots (cell means with their 95 %
// intervals, paired differences with theirs, the QAT-fraction curves beside the planner's
// predicted fraction, the accuracy-vs-bits frontier), the run a frontier point stands for with
// its recipe (the per-layer plan) and "Export plan…", and the reproducibility manifest. Every
// number comes from the engine's analysis (projects/experiment_report.h → engine/experiments).
#pragma once

#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "ui/experiment_snapshot.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QToolButton;

namespace ql {

class IntervalPlot;

// What Export plan… offers: ("quantlab", its file filter), then each of the engine's
// plan_export_kinds() with its filter.
QList<QPair<QString, QString>> planExportChoices();

class ExperimentResultPanel : public QWidget {
    Q_OBJECT
public:
    explicit ExperimentResultPanel(QWidget* parent = nullptr);

    // The experiment's current state (snapshot.report null: nothing finished yet).
    void setSnapshot(const ExperimentSnapshot& snapshot);
    // The metric the plots show ("exact_match", "kl", …); false when the result has none such.
    bool setMetric(const QString& metric);
    QString metric() const;

    IntervalPlot* cellPlot() const { return m_cells; }
    IntervalPlot* differencePlot() const { return m_differences; }
    IntervalPlot* fractionPlot() const { return m_fraction; }
    IntervalPlot* frontierPlot() const { return m_frontier; }
    QTabWidget* tabs() const { return m_tabs; }
    // Per frontier point (in plot order) the cell key it stands for.
    QStringList frontierCells() const { return m_frontierCells; }
    // Per bar of the cell / difference plot the cell key / "a − b" it stands for.
    QStringList cellKeys() const { return m_cellKeys; }

    // Selects the run of `cell` (its first finished replicate) and shows its plan.
    void selectCell(const QString& cell);
    QString selectedCell() const { return m_selectedCell; }
    qint64 selectedRunId() const { return m_selectedRun; }
    QString selectedRecipeJson() const { return m_selectedRecipe; }
    // Writes the selected run's plan as a QuantLab recipe (its recipe JSON, unchanged), or in one
    // of the engine's plan forms for its model (`as` one of plan_export_kinds():
    // "compressed-tensors", "modelopt", "llama-tensor-types"; engine/api/export_api.h export_plan,
    // as `quantlab-cli recipe export` writes them); the error text, "" on success.
    QString exportPlan(const QString& path, const QString& as = QStringLiteral("quantlab")) const;
    QString manifestText() const;
    bool manifestShown() const;

signals:
    // A frontier point (or a cell) was chosen: the cell, the replicate and the project run.
    void runSelected(const QString& cell, int replicate, qint64 runId);

private:
    void rebuildMetrics();
    void updatePlots();
    void updateManifest();
    void exportPlanInteractively();

    ExperimentSnapshot m_snapshot;
    QComboBox* m_metric = nullptr;
    QTabWidget* m_tabs = nullptr;
    IntervalPlot* m_cells = nullptr;
    IntervalPlot* m_differences = nullptr;
    IntervalPlot* m_fraction = nullptr;
    IntervalPlot* m_frontier = nullptr;
    QLabel* m_selection = nullptr;
    QPlainTextEdit* m_recipe = nullptr;
    QPushButton* m_exportPlan = nullptr;
    QToolButton* m_manifestToggle = nullptr;
    QPlainTextEdit* m_manifest = nullptr;
    QStringList m_frontierCells, m_cellKeys;
    QString m_selectedCell, m_selectedRecipe;
    qint64 m_selectedRun = 0;
    QString m_lastAnalysis;
};

// "qad", "NVFP4_DEFAULT · 0.3": a cell's grid values as a short label.
QString experimentCellLabel(const experiments::Cell& cell);

}  // namespace ql
