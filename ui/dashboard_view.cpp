// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/dashboard_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QSet>
#include <QVBoxLayout>

#include "plots/metric_plot.h"
#include "plots/plot_style.h"
#include "plots/series_palette.h"
#include "ui/flight_recorder_panel.h"

namespace ql {
namespace {

QString key(qint64 run, const QString& series) { return QStringLiteral("%1|%2").arg(run).arg(series); }


}  // namespace

DashboardView::DashboardView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 6, 6, 6);
    m_hint = new QLabel(tr("Select runs in the project explorer (Ctrl+click for several) or start one: their curves appear here live."), this);
    m_hint->setObjectName(QStringLiteral("dashboardHint"));
    m_hint->setWordWrap(true);
    outer->addWidget(m_hint);
    auto* grid = new QGridLayout;
    outer->addLayout(grid, 1);
    struct Def {
        const char* id;
        QString title, ylabel;
        QStringList series;
    };
    const Def defs[] = {
        {"loss", tr("Training loss"), tr("loss"), {QStringLiteral("train/loss")}},
        {"kl", tr("KL to teacher"), tr("nats / token"), {QStringLiteral("train/kl"), QStringLiteral("eval/kl")}},
        // Encoders: cosine to the teacher (train/cosine per step, eval/cosine_* held out) and the
        // pairs' Spearman, all in [-1, 1] like the accuracies.
        {"eval", tr("Eval accuracy / cosine"), tr("fraction"),
         {QStringLiteral("eval/exact_match"), QStringLiteral("eval/accuracy"), QStringLiteral("eval/agreement"),
          QStringLiteral("eval/cosine_mean"), QStringLiteral("eval/cosine_p5"), QStringLiteral("eval/spearman"),
          QStringLiteral("train/cosine")}},
        {"lr", tr("Learning rate"), tr("lr"), {QStringLiteral("train/lr")}},
        {"grad_norm", tr("Gradient norm"), tr("‖g‖₂"), {QStringLiteral("train/grad_norm")}},
        {"throughput", tr("Throughput"), tr("tokens / s"), {QStringLiteral("train/tokens_per_s")}},
    };
    int i = 0;
    for (const Def& d : defs) {
        Panel p;
        p.id = QString::fromLatin1(d.id);
        p.series = d.series;
        p.plot = new MetricPlot(this);
        p.plot->setObjectName(QStringLiteral("plot:%1").arg(p.id));
        p.plot->setTitle(d.title);
        p.plot->setYLabel(d.ylabel);
        p.plot->setMinimumSize(240, 220);  // three across fit an 840-pixel view (1280-wide window)
        // Per-step curves are noisy (one batch each); a TensorBoard-like default EMA shows the
        // trend with the raw curve faint behind it. Eval points and the LR are exact: unsmoothed.
        if (p.id != QLatin1String("eval") && p.id != QLatin1String("lr")) p.plot->setSmoothing(0.6);
        grid->addWidget(p.plot, i / 3, i % 3);
        m_panels.push_back(p);
        ++i;
    }
    m_flight = new FlightRecorderPanel(this);
    m_flight->setObjectName(QStringLiteral("flightRecorder"));
    outer->addWidget(m_flight, 1);
}

MetricPlot* DashboardView::plot(const QString& id) const {
    for (const Panel& p : m_panels)
        if (p.id == id) return p.plot;
    return nullptr;
}

QStringList DashboardView::plotIds() const {
    QStringList ids;
    for (const Panel& p : m_panels) ids << p.id;
    return ids;
}

DashboardView::Panel* DashboardView::panelFor(const QString& series) {
    for (Panel& p : m_panels)
        if (p.series.contains(series)) return &p;
    return nullptr;
}

QList<qint64> DashboardView::runs() const {
    QList<qint64> ids;
    for (const auto& r : m_runs) ids << r.first;
    return ids;
}

QList<qint64> DashboardView::setRuns(const QList<QPair<qint64, QString>>& runs) {
    if (runs == m_runs) return {};
    // Runs that stay keep their curves (the watcher sends only new points for them) and their
    // colour; only the series of runs no longer selected go.
    QSet<qint64> keep;
    for (const auto& r : runs) keep.insert(r.first);
    for (auto it = m_seriesIds.begin(); it != m_seriesIds.end();) {
        const qint64 run = it.key().section(QLatin1Char('|'), 0, 0).toLongLong();
        if (keep.contains(run)) {
            ++it;
            continue;
        }
        if (Panel* p = panelFor(it.key().section(QLatin1Char('|'), 1))) p->plot->removeSeries(it.value());
        m_counts.remove(it.key());
        it = m_seriesIds.erase(it);
    }
    for (auto it = m_colors.begin(); it != m_colors.end();) it = keep.contains(it.key()) ? std::next(it) : m_colors.erase(it);
    for (const auto& r : runs) {
        if (m_colors.contains(r.first)) continue;
        int index = 0;
        const QList<int> used = m_colors.values();
        while (used.contains(index)) ++index;
        m_colors.insert(r.first, index);
    }
    QList<qint64> added;
    for (const auto& r : runs) {
        bool had = false;
        for (const auto& old : m_runs) had = had || old.first == r.first;
        if (!had) added << r.first;
    }
    m_runs = runs;
    m_hint->setVisible(runs.isEmpty());
    m_flight->setRuns(runs);
    return added;
}

qint64 DashboardView::pointCount(qint64 runId, const QString& series) const { return m_counts.value(key(runId, series)); }

void DashboardView::addSeries(const QVector<SeriesChunk>& chunks) {
    m_flight->addSeries(chunks);
    for (const SeriesChunk& c : chunks) {
        QString runName;
        for (const auto& r : m_runs)
            if (r.first == c.runId) runName = r.second;
        if (runName.isEmpty()) continue;  // a chunk for a run no longer shown
        const int runIndex = m_colors.value(c.runId);
        Panel* panel = panelFor(c.name);
        if (!panel) continue;
        const QString k = key(c.runId, c.name);
        auto it = m_seriesIds.find(k);
        if (it == m_seriesIds.end()) {
            // Several metrics of one run in one plot (train/kl and eval/kl) share the run's colour;
            // the plot tells them apart by line style.
            // One colour per run across all plots (each plot alone would number runs by arrival).
            const QColor color = seriesColor(PlotStyle::fromPalette(palette(), font()), runIndex);
            it = m_seriesIds.insert(k, panel->plot->addSeries(runName, c.name, color));
        }
        if (c.reset) {
            panel->plot->setSeriesData(*it, c.steps, c.values);
            m_counts[k] = static_cast<qint64>(c.steps.size());
        } else {
            panel->plot->appendPoints(*it, c.steps, c.values);
            m_counts[k] += static_cast<qint64>(c.steps.size());
        }
    }
}

}  // namespace ql
