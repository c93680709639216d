// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>

#include "plots/bar_chart.h"
#include "ui/run_metrics.h"

namespace ql {

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_hint = new QLabel(tr("Select two or more runs in the project explorer to compare them. The best value of each metric is "
                           "highlighted."), this);
    m_hint->setWordWrap(true);
    layout->addWidget(m_hint);
    auto* split = new QSplitter(Qt::Vertical, this);
    layout->addWidget(split, 1);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("compareTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(false);
    // Run names hold model paths: elide them in the middle rather than widen the window.
    m_table->setTextElideMode(Qt::ElideMiddle);
    auto* chartBox = new QWidget(split);
    auto* chartLayout = new QVBoxLayout(chartBox);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Chart:"), chartBox));
    m_metric = new QComboBox(chartBox);
    m_metric->setObjectName(QStringLiteral("compareMetric"));
    for (const RunMetric& m : compareMetrics()) m_metric->addItem(m.title, m.key);
    row->addWidget(m_metric);
    row->addStretch(1);
    chartLayout->addLayout(row);
    m_chart = new BarChart(chartBox);
    m_chart->setObjectName(QStringLiteral("compareChart"));
    m_chart->setMinimumHeight(260);
    chartLayout->addWidget(m_chart, 1);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 2);
    connect(m_metric, &QComboBox::currentIndexChanged, this, &CompareView::updateChart);
}

void CompareView::setRuns(const QVector<RunRow>& runs) {
    m_runs = runs;
    rebuild();
}

void CompareView::setChartMetric(const QString& key) {
    const int i = m_metric->findData(key);
    if (i >= 0) m_metric->setCurrentIndex(i);
}

int CompareView::bestRow(const QString& key) const {
    const RunMetric* metric = nullptr;
    for (const RunMetric& m : compareMetrics())
        if (m.key == key) metric = &m;
    if (!metric) return -1;
    int best = -1;
    double bestValue = 0;
    for (int i = 0; i < m_runs.size(); ++i) {
        const auto v = runMetricValue(m_runs[i], *metric);
        if (!v || !std::isfinite(*v)) continue;
        if (best < 0 || (metric->higherIsBetter ? *v > bestValue : *v < bestValue)) {
            best = i;
            bestValue = *v;
        }
    }
    return best;
}

void CompareView::rebuild() {
    m_hint->setVisible(m_runs.size() < 2);
    // Only the metrics some selected run has: an empty "Accuracy" column for a language model
    // only takes room.
    QVector<RunMetric> shown;
    for (const RunMetric& m : compareMetrics())
        for (const RunRow& r : m_runs)
            if (runMetricValue(r, m)) {
                shown.push_back(m);
                break;
            }
    // The chart follows the table: a metric none of the runs has (exact match for encoder runs)
    // would draw an empty chart, so switch to the first one they have.
    bool chartShown = false;
    for (const RunMetric& m : shown) chartShown = chartShown || m.key == m_metric->currentData().toString();
    if (!chartShown && !shown.isEmpty()) {
        const QSignalBlocker block(m_metric);
        setChartMetric(shown.front().key);
    }
    m_table->clear();
    m_table->setRowCount(m_runs.size());
    m_table->setColumnCount(2 + shown.size());
    QStringList headers{tr("Run"), tr("Recipe")};
    for (const RunMetric& m : shown) headers << (m.title + (m.higherIsBetter ? QStringLiteral(" ↑") : QStringLiteral(" ↓")));
    m_table->setHorizontalHeaderLabels(headers);
    const QColor bestBg(0x2b, 0x8a, 0x3e, 70);
    for (int r = 0; r < m_runs.size(); ++r) {
        const RunRow& run = m_runs[r];
        auto* name = new QTableWidgetItem(QStringLiteral("#%1 %2").arg(run.id).arg(run.name));
        name->setToolTip(run.name);
        m_table->setItem(r, 0, name);
        m_table->setItem(r, 1, new QTableWidgetItem(run.recipe));
    }
    for (int c = 0; c < shown.size(); ++c) {
        const int best = bestRow(shown[c].key);
        for (int r = 0; r < m_runs.size(); ++r) {
            const auto v = runMetricValue(m_runs[r], shown[c]);
            auto* item = new QTableWidgetItem(v ? formatMetric(shown[c], *v) : QStringLiteral("—"));
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (r == best && m_runs.size() > 1) {
                item->setBackground(bestBg);
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
                item->setToolTip(tr("best of the selected runs"));
            }
            m_table->setItem(r, 2 + c, item);
        }
    }
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
    m_table->resizeColumnToContents(0);
    m_table->setColumnWidth(0, std::min(m_table->columnWidth(0), 420));
    updateChart();
}

void CompareView::updateChart() {
    const QString key = m_metric->currentData().toString();
    const RunMetric* metric = nullptr;
    for (const RunMetric& m : compareMetrics())
        if (m.key == key) metric = &m;
    if (!metric) return;
    const int best = bestRow(key);
    QVector<BarChart::Bar> bars;
    for (int i = 0; i < m_runs.size(); ++i) {
        const auto v = runMetricValue(m_runs[i], *metric);
        if (!v) continue;
        BarChart::Bar b;
        b.label = QStringLiteral("#%1 %2").arg(m_runs[i].id).arg(m_runs[i].recipe.isEmpty() ? m_runs[i].kind : m_runs[i].recipe);
        b.value = metric->percent ? 100.0 * *v : *v;
        b.highlighted = i == best;
        b.tooltip = QStringLiteral("%1\n%2 = %3").arg(m_runs[i].name, metric->title, formatMetric(*metric, *v));
        bars.push_back(b);
    }
    m_chart->setHigherIsBetter(metric->higherIsBetter);
    m_chart->setHighlightLabel(tr("best"));
    m_chart->setValueLabel(metric->percent ? metric->title + QStringLiteral(" (%)") : metric->title);
    m_chart->setBars(bars);
}

}  // namespace ql
