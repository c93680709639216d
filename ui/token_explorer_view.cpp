// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/token_explorer_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
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

QString percent(double v, int decimals = 2) { return QStringLiteral("%1 %").arg(100.0 * v, 0, 'f', decimals); }

// The demo's sequences start with <bos>: noise in a table of problems.
QString readable(const std::string& text) {
    QString s = QString::fromStdString(text);
    if (s.startsWith(QLatin1String("<bos>"))) s.remove(0, 5);
    return s;
}

}  // namespace

TokenExplorerView::TokenExplorerView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Run"), this));
    m_run = new QComboBox(this);
    m_run->setObjectName(QStringLiteral("tokensRun"));
    limitComboWidth(m_run, 24);
    bar->addWidget(m_run, 1);
    layout->addLayout(bar);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("tokensSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("worstTokens"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->setVisible(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* right = new QSplitter(Qt::Vertical, split);
    m_tokenNote = new QLabel(tr("Click a token for its error through the blocks and the layers that hurt it most."), right);
    m_tokenNote->setObjectName(QStringLiteral("tokenNote"));
    m_tokenNote->setWordWrap(true);
    m_curve = new MetricPlot(right);
    m_curve->setObjectName(QStringLiteral("tokenDepthPlot"));
    m_curve->setTitle(tr("This token through the blocks"));
    m_curve->setXLabel(tr("block"));
    m_curve->setKeyName(QStringLiteral("block"));
    m_curve->setYLabel(tr("relative L2 error"));
    m_curve->setExportName(QStringLiteral("token-depth"));
    m_layers = new BarChart(right);
    m_layers->setObjectName(QStringLiteral("tokenLayers"));
    m_layers->setTitle(tr("Largest isolated layer errors on this token (click: histogram)"));
    m_layers->setHorizontal(true);
    m_layers->setValueLabel(tr("relative L2 error of the layer output"));
    m_layers->setHigherIsBetter(false);
    m_layers->setExportName(QStringLiteral("token-layers"));
    right->setStretchFactor(0, 0);
    right->setStretchFactor(1, 1);
    right->setStretchFactor(2, 1);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    connect(m_run, &QComboBox::currentIndexChanged, this, [this] { refreshRun(); });
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        const QList<QTableWidgetItem*> items = m_table->selectedItems();
        m_selected = items.isEmpty() ? -1 : items.first()->row();
        refreshToken();
    });
    connect(m_layers, qOverload<const QString&>(&BarChart::barClicked), this, &TokenExplorerView::layerRequested);
    refreshRun();
}

void TokenExplorerView::setRuns(const QList<DivergenceRun>& runs) {
    const qint64 current = m_run->currentData().toLongLong();
    const bool newRun = !runs.isEmpty() && (m_runs.isEmpty() || runs.last().id != m_runs.last().id);
    m_runs = runs;
    const QSignalBlocker block(m_run);
    m_run->clear();
    for (const DivergenceRun& r : m_runs) m_run->addItem(r.label, r.id);
    const int keep = m_run->findData(current);
    m_run->setCurrentIndex(newRun || keep < 0 ? m_run->count() - 1 : keep);
    refreshRun();
}

bool TokenExplorerView::selectRun(qint64 id) {
    const int i = m_run->findData(id);
    if (i < 0) return false;
    m_run->setCurrentIndex(i);
    return true;
}

const DivergenceReport* TokenExplorerView::current() const {
    const qint64 id = m_run->currentData().toLongLong();
    for (const DivergenceRun& r : m_runs)
        if (r.id == id) return &r.report;
    return nullptr;
}

QString TokenExplorerView::tokenText(int row) const {
    const DivergenceReport* r = current();
    if (!r || row < 0 || row >= static_cast<int>(r->worst_tokens.size())) return {};
    const TokenDivergence& t = r->worst_tokens[static_cast<size_t>(row)];
    return readable(t.context) + QStringLiteral("[") + QString::fromStdString(t.target) + QStringLiteral("]") +
           QString::fromStdString(t.continuation);
}

bool TokenExplorerView::selectToken(int row) {
    if (row < 0 || row >= m_table->rowCount()) return false;
    m_table->selectRow(row);
    return true;
}

void TokenExplorerView::refreshRun() {
    const DivergenceReport* r = current();
    m_selected = -1;
    const QSignalBlocker block(m_table);
    m_table->clear();
    const bool encoder = r && r->encoder;
    const QStringList headers = encoder ? QStringList{tr("Rel. L2 of the output"), tr("Token in context")}
                                        : QStringList{tr("KL"), tr("Token in context [target]"), tr("FP top-1"), tr("Quantized top-1"),
                                                      tr("Δp target"), tr("Domain")};
    m_table->setColumnCount(headers.size());
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(r ? static_cast<int>(r->worst_tokens.size()) : 0);
    if (!r) {
        m_summary->setText(tr("No divergence run yet (Depth tab: Measure Depth & Tokens)."));
    } else if (!r->tokens) {
        m_summary->setText(tr("An encoder has no token distributions: the tokens are ranked by the relative error of the "
                              "model's output at them; sentence-embedding cosine %1.")
                               .arg(r->sentence_cosine ? num(*r->sentence_cosine, 6) : QStringLiteral("—")));
    } else {
        const TokenDivergenceSummary& s = *r->tokens;
        m_summary->setText(tr("%1 scored tokens of %2 — KL mean %3, median %4, p90 %5, p95 %6, p99 %7, max %8 · same top-1 "
                              "%9 · RMS Δp %10 · PPL %11 → %12 (Δppl %13)")
                               .arg(s.tokens)
                               .arg(QString::fromStdString(r->data), num(s.kl_mean), num(s.kl_median), num(s.kl_p90),
                                    num(s.kl_p95), num(s.kl_p99), num(s.kl_max), percent(s.same_top1))
                               .arg(percent(s.rms_delta_p, 3), num(s.ppl_fp, 5), num(s.ppl_q, 5),
                                    QString::number(s.delta_ppl, 'g', 4)));
    }
    if (r) {
        int row = 0;
        for (const TokenDivergence& t : r->worst_tokens) {
            QStringList cells = {num(t.kl), tokenText(row)};
            if (!encoder)
                cells << QStringLiteral("%1 (%2)").arg(QString::fromStdString(t.fp_top1), percent(t.p_fp_top1, 1))
                      << QStringLiteral("%1 (%2)").arg(QString::fromStdString(t.q_top1), percent(t.p_q_top1, 1))
                      << QStringLiteral("%1%2").arg(t.delta_p >= 0 ? QStringLiteral("+") : QString(), percent(t.delta_p, 1))
                      << QString::fromStdString(t.domain);
            for (int c = 0; c < cells.size(); ++c) {
                auto* item = new QTableWidgetItem(cells[c]);
                if (c == 0 || c == 4) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                if (c == 1) {
                    QFont mono = item->font();
                    mono.setFamily(QStringLiteral("monospace"));
                    item->setFont(mono);
                    item->setToolTip(tr("example %1, position %2").arg(t.example).arg(t.position));
                }
                m_table->setItem(row, c, item);
            }
            ++row;
        }
    }
    refreshToken();
}

void TokenExplorerView::refreshToken() {
    const DivergenceReport* r = current();
    m_curve->clear();
    if (!r || m_selected < 0 || m_selected >= static_cast<int>(r->worst_tokens.size())) {
        m_layers->setBars({});
        m_tokenNote->setText(tr("Click a token for its error through the blocks and the layers that hurt it most."));
        return;
    }
    const TokenDivergence& t = r->worst_tokens[static_cast<size_t>(m_selected)];
    std::vector<double> x;
    for (size_t i = 0; i < t.block_propagated.size(); ++i) x.push_back(static_cast<double>(i));
    m_curve->setSeriesData(m_curve->addSeries(tr("token"), tr("propagated")), x, t.block_propagated);
    m_curve->setSeriesData(m_curve->addSeries(tr("token"), tr("isolated")), x, t.block_isolated);
    m_curve->resetZoom();
    QVector<BarChart::Bar> bars;
    for (const auto& [layer, error] : t.worst_layers) {
        BarChart::Bar b;
        b.label = QString::fromStdString(layer);
        b.value = error;
        b.tooltip = tr("relative L2 error of this layer's output at this token, the layer quantized alone on its FP input");
        bars.push_back(b);
    }
    m_layers->setBars(bars, true);
    m_tokenNote->setText(r->encoder ? tr("%1 — output error %2").arg(tokenText(m_selected), num(t.kl))
                                    : tr("%1 — KL %2; FP says %3 (%4), quantized %5 (%6); p(target) %7 → %8")
                                          .arg(tokenText(m_selected), num(t.kl), QString::fromStdString(t.fp_top1),
                                               percent(t.p_fp_top1, 1), QString::fromStdString(t.q_top1), percent(t.p_q_top1, 1),
                                               percent(t.p_fp_target, 1), percent(t.p_q_target, 1)));
}

}  // namespace ql
