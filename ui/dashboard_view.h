// SPDX-License-Identifier: GPL-3.0-or-later
// The live dashboard: training loss, KL to the teacher, eval accuracy, learning rate, gradient
// norm and throughput against the step, for every run selected in the project explorer, each run
// in its own colour in every plot. Points arrive from the project watcher (the project file),
// so a run of this GUI and one of quantlab-cli in another process look the same.
#pragma once

#include <QHash>
#include <QList>
#include <QVector>
#include <QWidget>

#include "ui/project_watcher.h"

class QLabel;

namespace ql {

class FlightRecorderPanel;
class MetricPlot;

class DashboardView : public QWidget {
    Q_OBJECT
public:
    explicit DashboardView(QWidget* parent = nullptr);

    // The runs to show (ids with names for the legends), in the order they get colours. Returns
    // the runs that were not shown before: their whole series must be (re)loaded.
    QList<qint64> setRuns(const QList<QPair<qint64, QString>>& runs);
    void addSeries(const QVector<SeriesChunk>& chunks);
    QList<qint64> runs() const;
    // Points shown for (run, series name); tests and screenshots read it.
    qint64 pointCount(qint64 runId, const QString& series) const;
    MetricPlot* plot(const QString& id) const;  // "loss", "kl", "eval", "lr", "grad_norm", "throughput"
    QStringList plotIds() const;
    // Per-layer quantizer heatmaps of the shown runs (the flight/* series).
    FlightRecorderPanel* flightRecorder() const { return m_flight; }

private:
    struct Panel {
        QString id;
        QStringList series;  // metric names it shows
        MetricPlot* plot = nullptr;
    };
    Panel* panelFor(const QString& series);

    QVector<Panel> m_panels;
    QList<QPair<qint64, QString>> m_runs;
    QHash<QString, int> m_seriesIds;    // "run|series" -> MetricPlot series id
    QHash<QString, qint64> m_counts;    // "run|series" -> points
    QHash<qint64, int> m_colors;        // run -> palette index, stable while the run is shown
    QLabel* m_hint = nullptr;
    FlightRecorderPanel* m_flight = nullptr;
};

}  // namespace ql
