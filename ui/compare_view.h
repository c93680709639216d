// SPDX-License-Identifier: GPL-3.0-or-later
// The compare view: the selected runs × their metrics (accuracy, perplexity, KL, size, bits per
// parameter, time) with the best value of each metric highlighted, and a bar chart of one metric
// across the runs.
#pragma once

#include <QVector>
#include <QWidget>

#include "ui/project_watcher.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace ql {

class BarChart;

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    void setRuns(const QVector<RunRow>& runs);
    QTableWidget* table() const { return m_table; }
    BarChart* chart() const { return m_chart; }
    void setChartMetric(const QString& key);
    // The row (run) holding the best value of metric `key`, -1 if none.
    int bestRow(const QString& key) const;

private:
    void rebuild();
    void updateChart();

    QVector<RunRow> m_runs;
    QLabel* m_hint = nullptr;
    QTableWidget* m_table = nullptr;
    QComboBox* m_metric = nullptr;
    BarChart* m_chart = nullptr;
};

}  // namespace ql
