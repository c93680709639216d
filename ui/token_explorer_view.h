// SPDX-License-Identifier: GPL-3.0-or-later
// The Layer Inspector's Tokens tab (docs/DIAGNOSIS.md): which tokens quantization hurts. For a
// divergence run of the project, llama.cpp's per-token summary (KL mean / median / p90 / p95 /
// p99 / max, same top-1, RMS Δp, Δppl) and the worst tokens in context (text, or the demo's
// problem) with both models' top-1 and Δp of the correct token. Clicking a token shows its
// error through the blocks (propagated and isolated) and the layers with the largest isolated
// error on it; clicking one of those asks for its histogram (layerRequested).
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include "ui/divergence_run.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace ql {

class BarChart;
class MetricPlot;

class TokenExplorerView : public QWidget {
    Q_OBJECT
public:
    explicit TokenExplorerView(QWidget* parent = nullptr);

    // The runs offered (the newest is selected when it is new).
    void setRuns(const QList<DivergenceRun>& runs);
    bool selectRun(qint64 id);
    // Selects row `row` of the worst-token table (its curves are shown); false when out of range.
    bool selectToken(int row);
    int selectedToken() const { return m_selected; }
    // What a table row shows as text: context[target]continuation.
    QString tokenText(int row) const;

    QLabel* summaryLabel() const { return m_summary; }
    QTableWidget* tokenTable() const { return m_table; }
    MetricPlot* tokenPlot() const { return m_curve; }
    BarChart* layerChart() const { return m_layers; }

signals:
    void layerRequested(const QString& layer);

private:
    const DivergenceReport* current() const;
    void refreshRun();
    void refreshToken();

    QList<DivergenceRun> m_runs;
    int m_selected = -1;
    QComboBox* m_run = nullptr;
    QLabel* m_summary = nullptr;
    QTableWidget* m_table = nullptr;
    MetricPlot* m_curve = nullptr;
    BarChart* m_layers = nullptr;
    QLabel* m_tokenNote = nullptr;
};

}  // namespace ql
