// SPDX-License-Identifier: GPL-3.0-or-later
// The Layer Inspector's Depth tab (docs/DIAGNOSIS.md): how a quantized model's error grows
// through depth, for one or several divergence runs of the project (NVFP4 vs MXFP4 vs FP8,
// before and after QAD, with and without SmoothQuant). Per run the propagated error (everything
// before quantized) and the isolated error (only that block, on the FP stream) over the blocks,
// of the block output or of its attention / MLP half, as relative L2, SQNR, cosine or KL at the
// logits; below, the KL each block adds to the final KL. Reports come from the project (stored
// by `quantlab-cli divergence --project` or the Measure button), so nothing is recomputed.
#pragma once

#include <QList>
#include <QPair>
#include <QString>
#include <QWidget>

#include "ui/divergence_run.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QTableWidget;

namespace ql {

class BarChart;
class MetricPlot;

class DepthView : public QWidget {
    Q_OBJECT
public:
    explicit DepthView(QWidget* parent = nullptr);

    // The runs offered; the newest (last) is shown, plus those the user had ticked.
    void setRuns(const QList<DivergenceRun>& runs);
    // Tick exactly these runs (by id); unknown ids are ignored.
    void showRuns(const QList<qint64>& ids);
    QList<qint64> shownRuns() const;
    // The checkpoints to compare besides the editor's recipe: (label, folder).
    void setCheckpointChoices(const QList<QPair<QString, QString>>& choices);
    // "rel_l2", "sqnr_db", "cosine", "kl"; and "block", "attention", "mlp".
    void setMeasure(const QString& measure);
    void setPart(const QString& part);

    MetricPlot* depthPlot() const { return m_plot; }
    BarChart* incrementChart() const { return m_increments; }
    QTableWidget* blockTable() const { return m_table; }

signals:
    // Measure the open model with the editor's recipe (empty folder) or against a checkpoint.
    void measureRequested(const QString& checkpointFolder);

private:
    void refresh();

    QList<DivergenceRun> m_runs;
    QPushButton* m_measure = nullptr;
    QComboBox* m_against = nullptr;
    QComboBox* m_measureBox = nullptr;
    QComboBox* m_partBox = nullptr;
    QListWidget* m_list = nullptr;
    QLabel* m_note = nullptr;
    MetricPlot* m_plot = nullptr;
    BarChart* m_increments = nullptr;
    QTableWidget* m_table = nullptr;
    bool m_updating = false;
};

}  // namespace ql
