// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/depth_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "plots/bar_chart.h"
#include "plots/metric_plot.h"

#include "ui/combo_width.h"

namespace ql {
namespace {

QString num(double v, int precision = 4) {
    if (std::isnan(v)) return QStringLiteral("—");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
    return QString::number(v, 'g', precision);
}

QString num(const std::optional<double>& v, int precision = 4) { return v ? num(*v, precision) : QStringLiteral("—"); }

const ErrorSplit& partOf(const BlockDivergence& b, const QString& part) {
    if (part == QLatin1String("attention")) return b.attention;
    if (part == QLatin1String("mlp")) return b.mlp;
    return b.block;
}

// The value a curve shows; NaN where the report has none (KL of an encoder).
double valueOf(const ErrorSplit& s, bool propagated, const QString& measure) {
    const HiddenError& e = propagated ? s.propagated : s.isolated;
    if (measure == QLatin1String("sqnr_db")) return e.sqnr_db;
    if (measure == QLatin1String("cosine")) return e.cosine;
    if (measure == QLatin1String("kl")) return (propagated ? s.kl_propagated : s.kl_isolated).value_or(std::nan(""));
    return e.rel_l2;
}

}  // namespace

DepthView::DepthView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    auto* bar = new QHBoxLayout;
    m_measure = new QPushButton(tr("Measure Depth && Tokens"), this);
    m_measure->setObjectName(QStringLiteral("measureDivergence"));
    m_measure->setToolTip(tr("Run the FP model and the quantized one side by side on the calibration data's held-out "
                             "part: the error of the residual stream block by block, what each block adds to the KL, "
                             "and the worst tokens (stored in the project)."));
    bar->addWidget(m_measure);
    bar->addWidget(new QLabel(tr("Quantized"), this));
    m_against = new QComboBox(this);
    m_against->setObjectName(QStringLiteral("divergenceAgainst"));
    m_against->setToolTip(tr("What is compared with the open FP model: the recipe of the editor (quantized now) or a "
                             "checkpoint of a PTQ / QAT / QAD run"));
    m_against->addItem(tr("Recipe of the editor"), QString());
    limitComboWidth(m_against, 28);
    bar->addWidget(m_against, 1);
    bar->addWidget(new QLabel(tr("Show"), this));
    m_measureBox = new QComboBox(this);
    m_measureBox->setObjectName(QStringLiteral("depthMeasure"));
    m_measureBox->addItem(tr("Relative L2 error"), QStringLiteral("rel_l2"));
    m_measureBox->addItem(tr("SQNR (dB)"), QStringLiteral("sqnr_db"));
    m_measureBox->addItem(tr("Cosine similarity"), QStringLiteral("cosine"));
    m_measureBox->addItem(tr("KL at the logits"), QStringLiteral("kl"));
    bar->addWidget(m_measureBox);
    bar->addWidget(new QLabel(tr("of"), this));
    m_partBox = new QComboBox(this);
    m_partBox->setObjectName(QStringLiteral("depthPart"));
    m_partBox->addItem(tr("block output"), QStringLiteral("block"));
    m_partBox->addItem(tr("attention half"), QStringLiteral("attention"));
    m_partBox->addItem(tr("MLP half"), QStringLiteral("mlp"));
    bar->addWidget(m_partBox);
    layout->addLayout(bar);
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("depthNote"));
    m_note->setWordWrap(true);
    layout->addWidget(m_note);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_list = new QListWidget(split);
    m_list->setObjectName(QStringLiteral("depthRuns"));
    m_list->setToolTip(tr("Divergence runs of the project: tick several to compare them"));
    m_list->setMinimumWidth(170);
    auto* plots = new QSplitter(Qt::Vertical, split);
    m_plot = new MetricPlot(plots);
    // Its tool row and a legend of up to six series sit above the curve: below this height a
    // 1280x800 window left the curve itself ~50 pixels (the view scrolls there instead).
    m_plot->setMinimumHeight(250);
    m_plot->setObjectName(QStringLiteral("depthPlot"));
    m_plot->setTitle(tr("Error through depth: propagated (solid) vs isolated (dashed)"));
    m_plot->setXLabel(tr("block"));
    m_plot->setKeyName(QStringLiteral("block"));
    m_plot->setExportName(QStringLiteral("depth"));
    m_increments = new BarChart(plots);
    m_increments->setObjectName(QStringLiteral("depthIncrements"));
    m_increments->setTitle(tr("KL each block adds (increments of the propagated KL)"));
    m_increments->setValueLabel(tr("nats/token"));  // the title says what: short enough for a short chart
    m_increments->setHigherIsBetter(false);
    m_increments->setExportName(QStringLiteral("kl-increments"));
    m_table = new QTableWidget(plots);
    m_table->setObjectName(QStringLiteral("depthTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    // The curve (with its legend above it) gets the most height: in a 1280x800 window equal
    // shares flattened it to a few pixels under the legend.
    plots->setStretchFactor(0, 4);
    plots->setStretchFactor(1, 2);
    plots->setStretchFactor(2, 1);
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    connect(m_measure, &QPushButton::clicked, this, [this] { emit measureRequested(m_against->currentData().toString()); });
    connect(m_measureBox, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_partBox, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_list, &QListWidget::itemChanged, this, [this] {
        if (!m_updating) refresh();
    });
    refresh();
}

void DepthView::setCheckpointChoices(const QList<QPair<QString, QString>>& choices) {
    const QString current = m_against->currentData().toString();
    m_against->clear();
    m_against->addItem(tr("Recipe of the editor"), QString());
    for (const auto& [label, folder] : choices) m_against->addItem(label, folder);
    const int i = m_against->findData(current);
    m_against->setCurrentIndex(i >= 0 ? i : 0);
}

void DepthView::setRuns(const QList<DivergenceRun>& runs) {
    QList<qint64> ticked = shownRuns();
    const bool newRun = !runs.isEmpty() && (m_runs.isEmpty() || runs.last().id != m_runs.last().id);
    if (newRun) ticked.append(runs.last().id);  // a new measurement is shown at once
    m_runs = runs;
    m_updating = true;
    m_list->clear();
    for (const DivergenceRun& r : m_runs) {
        auto* item = new QListWidgetItem(r.label, m_list);
        item->setData(Qt::UserRole, r.id);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(ticked.contains(r.id) ? Qt::Checked : Qt::Unchecked);
        item->setToolTip(QStringLiteral("%1 vs %2 on %3")
                             .arg(QString::fromStdString(r.report.quantized), QString::fromStdString(r.report.model),
                                  QString::fromStdString(r.report.data)));
    }
    m_updating = false;
    refresh();
}

void DepthView::showRuns(const QList<qint64>& ids) {
    m_updating = true;
    for (int i = 0; i < m_list->count(); ++i) {
        QListWidgetItem* item = m_list->item(i);
        item->setCheckState(ids.contains(item->data(Qt::UserRole).toLongLong()) ? Qt::Checked : Qt::Unchecked);
    }
    m_updating = false;
    refresh();
}

QList<qint64> DepthView::shownRuns() const {
    QList<qint64> ids;
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->checkState() == Qt::Checked) ids << m_list->item(i)->data(Qt::UserRole).toLongLong();
    return ids;
}

void DepthView::setMeasure(const QString& measure) {
    const int i = m_measureBox->findData(measure);
    if (i >= 0) m_measureBox->setCurrentIndex(i);
}

void DepthView::setPart(const QString& part) {
    const int i = m_partBox->findData(part);
    if (i >= 0) m_partBox->setCurrentIndex(i);
}

void DepthView::refresh() {
    const QString measure = m_measureBox->currentData().toString(), part = m_partBox->currentData().toString();
    const QList<qint64> shown = shownRuns();
    m_plot->clear();
    m_plot->setYLabel(m_measureBox->currentText());
    m_plot->setLogY(measure == QLatin1String("rel_l2") || measure == QLatin1String("kl"));
    QStringList blocks, groups;
    QVector<QVector<double>> increments;
    const DivergenceRun* first = nullptr;
    for (const DivergenceRun& r : m_runs) {
        if (!shown.contains(r.id)) continue;
        if (!first) first = &r;
        std::vector<double> x, prop, iso;
        QVector<double> inc;
        for (size_t i = 0; i < r.report.blocks.size(); ++i) {
            const ErrorSplit& s = partOf(r.report.blocks[i], part);
            x.push_back(static_cast<double>(i));
            prop.push_back(valueOf(s, true, measure));
            iso.push_back(valueOf(s, false, measure));
            inc.push_back(s.kl_increment.value_or(std::nan("")));
            if (static_cast<size_t>(blocks.size()) <= i) blocks << QString::fromStdString(r.report.blocks[i].name);
        }
        m_plot->setSeriesData(m_plot->addSeries(r.label, tr("propagated")), x, prop);
        m_plot->setSeriesData(m_plot->addSeries(r.label, tr("isolated")), x, iso);
        if (r.report.kl) {
            groups << r.label;
            increments << inc;
        }
    }
    m_plot->resetZoom();
    m_increments->setGroupedBars(blocks, groups, increments);
    if (m_runs.isEmpty())
        m_note->setText(tr("No divergence run in this project yet: press Measure Depth & Tokens (or run "
                           "'quantlab-cli divergence MODEL --recipe R --data D --project P.qlab')."));
    else if (!first)
        m_note->setText(tr("Tick a run on the left to show it."));
    else if (first->report.encoder)
        m_note->setText(tr("%1: an encoder has no logits, so the errors are those of its hidden states (the last block's "
                           "output is the model's output); sentence-embedding cosine %2.")
                            .arg(first->label, num(first->report.sentence_cosine, 6)));
    else
        m_note->setText(tr("%1: final KL %2 nats/token; the blocks' isolated KLs add up to %3 (%4). Propagated = "
                           "everything up to the block quantized; isolated = only the block, on the FP model's stream.")
                            .arg(first->label, num(first->report.kl), num(first->report.isolated_kl_sum),
                                 first->report.kl && first->report.isolated_kl_sum &&
                                         *first->report.isolated_kl_sum < *first->report.kl
                                     ? tr("less than the final KL: the errors compound")
                                     : tr("more than the final KL: later blocks partly absorb what earlier ones break")));

    // The first shown run, block by block.
    const QStringList headers = {tr("Block"), tr("Propagated rel. L2"), tr("SQNR (dB)"), tr("Cosine"), tr("Isolated rel. L2"),
                                 tr("Attention isolated"), tr("MLP isolated"), tr("KL propagated"), tr("KL added"),
                                 tr("KL isolated")};
    m_table->clear();
    m_table->setColumnCount(headers.size());
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(first ? static_cast<int>(first->report.blocks.size()) : 0);
    if (!first) return;
    int row = 0;
    for (const BlockDivergence& b : first->report.blocks) {
        const QStringList cells = {QString::fromStdString(b.name),      num(b.block.propagated.rel_l2),
                                   num(b.block.propagated.sqnr_db, 3),  num(b.block.propagated.cosine, 6),
                                   num(b.block.isolated.rel_l2),        num(b.attention.isolated.rel_l2),
                                   num(b.mlp.isolated.rel_l2),          num(b.block.kl_propagated),
                                   num(b.block.kl_increment),           num(b.block.kl_isolated)};
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, c, item);
        }
        ++row;
    }
}

}  // namespace ql
