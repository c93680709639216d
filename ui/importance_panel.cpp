// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/importance_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "plots/bar_chart.h"

namespace ql {
namespace {

enum Column { kLayer, kTensor, kTokens, kMean, kStd, kKurtosis, kActive, kEntropy, kZd, kCossim, kTop, kColumns };

QTableWidgetItem* number(double v, int precision, const QString& suffix = QString()) {
    auto* item = new QTableWidgetItem(std::isfinite(v) ? QString::number(v, 'g', precision) + suffix : QStringLiteral("-"));
    item->setData(Qt::UserRole, v);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

ImportancePanel::ImportancePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 6, 0, 0);
    auto* bar = new QHBoxLayout;
    m_open = new QPushButton(tr("Open Importance Matrix…"), this);
    m_open->setObjectName(QStringLiteral("openImatrix"));
    m_open->setToolTip(tr("Read an importance matrix written by quantlab-cli imatrix or llama.cpp's llama-imatrix "
                          "(GGUF or legacy .dat)"));
    m_compute = new QPushButton(tr("Collect from Calibration Data"), this);
    m_compute->setObjectName(QStringLiteral("computeImatrix"));
    m_compute->setToolTip(tr("Run the recipe editor's calibration data through the open model and sum the squared "
                             "inputs of every Linear layer per input column, as llama-imatrix does"));
    bar->addWidget(m_open);
    bar->addWidget(m_compute);
    m_status = new QLabel(tr("No importance matrix yet."), this);
    m_status->setObjectName(QStringLiteral("imatrixStatus"));
    m_status->setWordWrap(true);
    bar->addWidget(m_status, 1);
    layout->addLayout(bar);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("imatrixTable"));
    m_table->setColumnCount(kColumns);
    m_table->setHorizontalHeaderLabels({tr("Layer"), tr("Tensor"), tr("Tokens"), tr("Mean x²"), tr("Std"), tr("Kurtosis"),
                                        tr("Active"), tr("Entropy"), tr("ZD"), tr("Cos prev"), tr("Top columns")});
    m_table->horizontalHeaderItem(kMean)->setToolTip(tr("Mean over input columns of the mean squared activation"));
    m_table->horizontalHeaderItem(kKurtosis)->setToolTip(tr("Pearson kurtosis of the per-column importance (3 for a "
                                                            "Gaussian): high = a few columns dominate"));
    m_table->horizontalHeaderItem(kActive)->setToolTip(tr("Columns whose mean squared activation exceeds 1e-5"));
    m_table->horizontalHeaderItem(kEntropy)->setToolTip(tr("Entropy of the importance distribution, as a share of "
                                                           "log2(columns): 100 % = every column alike"));
    m_table->horizontalHeaderItem(kZd)->setToolTip(tr("Share of columns more than one standard deviation above the mean"));
    m_table->horizontalHeaderItem(kCossim)->setToolTip(tr("Cosine of the importance vector with the same tensor of the "
                                                          "previous layer"));
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSortingEnabled(false);

    auto* charts = new QSplitter(Qt::Horizontal, split);
    m_columns = new BarChart(charts);
    m_columns->setObjectName(QStringLiteral("imatrixColumns"));
    m_columns->setValueLabel(tr("mean x² per input column"));
    m_columns->setLabelTop(6);
    m_columns->setExportName(QStringLiteral("imatrix-columns"));
    m_cosine = new BarChart(charts);
    m_cosine->setObjectName(QStringLiteral("imatrixCosine"));
    m_cosine->setValueLabel(tr("cosine to the previous layer"));
    m_cosine->setHighlightLabel(tr("selected layer"));
    m_cosine->setExportName(QStringLiteral("imatrix-cosine"));
    charts->setStretchFactor(0, 3);
    charts->setStretchFactor(1, 2);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);

    connect(m_open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Importance Matrix"), QString(),
                                                          tr("Importance matrices (*.gguf *.dat *.imatrix);;All files (*)"));
        if (!path.isEmpty()) emit openRequested(path);
    });
    connect(m_compute, &QPushButton::clicked, this, &ImportancePanel::computeRequested);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ImportancePanel::refreshSelection);
}

void ImportancePanel::setStatus(const QString& text) { m_status->setText(text); }

void ImportancePanel::setReport(const ImatrixReport& report, const QString& source) {
    m_report = report;
    QString datasets;
    for (const std::string& d : report.datasets) datasets += (datasets.isEmpty() ? "" : ", ") + QString::fromStdString(d);
    m_status->setText(tr("%1: %2 weights, %3 chunks of %4 tokens%5")
                          .arg(source)
                          .arg(report.entries)
                          .arg(report.chunk_count)
                          .arg(report.chunk_size)
                          .arg(datasets.isEmpty() ? QString() : tr(" (%1)").arg(datasets)));
    const QSignalBlocker block(m_table);
    m_table->setRowCount(static_cast<int>(report.statistics.size()));
    for (int r = 0; r < m_table->rowCount(); ++r) {
        const ImportanceStatistics& s = report.statistics[static_cast<size_t>(r)];
        auto* layer = new QTableWidgetItem(s.layer >= 0 ? QString::number(s.layer) : QStringLiteral("-"));
        layer->setData(Qt::UserRole, QString::fromStdString(s.name));
        layer->setToolTip(QString::fromStdString(s.name));
        m_table->setItem(r, kLayer, layer);
        m_table->setItem(r, kTensor, new QTableWidgetItem(QString::fromStdString(s.tensor)));
        m_table->setItem(r, kTokens, number(static_cast<double>(s.tokens), 10));
        m_table->setItem(r, kMean, number(s.mean, 4));
        m_table->setItem(r, kStd, number(s.std, 4));
        m_table->setItem(r, kKurtosis, number(s.kurtosis, 4));
        m_table->setItem(r, kActive, number(100.0 * s.active, 4, QStringLiteral(" %")));
        m_table->setItem(r, kEntropy, number(100.0 * s.entropy_normalized, 4, QStringLiteral(" %")));
        m_table->setItem(r, kZd, number(100.0 * s.zd, 3, QStringLiteral(" %")));
        m_table->setItem(r, kCossim, s.layer > 0 ? number(s.cossim, 4) : new QTableWidgetItem(QStringLiteral("-")));
        QString top;
        for (size_t i = 0; i < s.top.size() && i < 5; ++i) top += (i ? ", " : "") + QString::number(s.top[i].first);
        m_table->setItem(r, kTop, new QTableWidgetItem(top));
    }
    if (m_table->rowCount() > 0) m_table->selectRow(0);
    refreshSelection();
}

bool ImportancePanel::selectEntry(const QString& name) {
    for (int r = 0; r < m_table->rowCount(); ++r)
        if (m_table->item(r, kLayer)->data(Qt::UserRole).toString() == name) {
            m_table->selectRow(r);
            return true;
        }
    return false;
}

QString ImportancePanel::currentEntry() const {
    const int r = m_table->currentRow();
    return r >= 0 && m_table->item(r, kLayer) ? m_table->item(r, kLayer)->data(Qt::UserRole).toString() : QString();
}

void ImportancePanel::refreshSelection() {
    if (!m_report) return;
    const QString name = currentEntry();
    const ImportanceStatistics* s = nullptr;
    for (const ImportanceStatistics& x : m_report->statistics)
        if (QString::fromStdString(x.name) == name) s = &x;
    if (!s) return;
    QVector<BarChart::Bar> bars;
    bars.reserve(static_cast<int>(s->values.size()));
    for (size_t j = 0; j < s->values.size(); ++j) {
        BarChart::Bar b;
        b.label = QString::number(j);
        b.value = s->values[j];
        for (const auto& [col, v] : s->top) b.highlighted |= static_cast<size_t>(col) == j;
        bars.push_back(b);
    }
    m_columns->setHighlightLabel(tr("top columns"));
    m_columns->setTitle(tr("%1: importance per input column").arg(name));
    m_columns->setBars(bars);
    // The same tensor kind in every layer: how alike consecutive layers' importance is.
    QVector<BarChart::Bar> cos;
    for (const ImportanceStatistics& x : m_report->statistics) {
        if (x.tensor != s->tensor || x.layer <= 0) continue;
        BarChart::Bar b;
        b.label = tr("layer %1").arg(x.layer);
        b.value = x.cossim;
        b.highlighted = x.name == s->name;
        b.tooltip = QString::fromStdString(x.name);
        cos.push_back(b);
    }
    m_cosine->setTitle(tr("%1: cosine to the previous layer").arg(QString::fromStdString(s->tensor)));
    m_cosine->setBars(cos);
}

}  // namespace ql
