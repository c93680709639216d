// SPDX-License-Identifier: GPL-3.0-or-later
// The dashboard's flight-recorder panel (docs/DIAGNOSIS.md "Flight recorder"): for a QAT/QAD run
// recorded with --record-every, one quantity at a time as a layers × steps heatmap -- bin flips
// since the last record or since the start, the fraction of weights at the clip points, amax /
// scale / global-scale drift, and (QAD) the teacher-student distance per block -- with a
// warning line while the run stagnates or diverges. Fed with the flight/* series the project
// watcher streams (engine/train/flight_recorder.h), so a quantlab-cli run shows the same, live.
#pragma once

#include <QList>
#include <QMap>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <map>
#include <vector>

#include "ui/project_watcher.h"

class QComboBox;
class QLabel;

namespace ql {

class HeatmapPlot;

class FlightRecorderPanel : public QWidget {
    Q_OBJECT
public:
    explicit FlightRecorderPanel(QWidget* parent = nullptr);

    // The runs shown on the dashboard (id, legend name); data of other runs is dropped.
    void setRuns(const QList<QPair<qint64, QString>>& runs);
    // Takes the chunks whose name starts with "flight/" and ignores the rest.
    void addSeries(const QVector<SeriesChunk>& chunks);
    bool hasData() const;

    // "flips_since_last", "flips_since_start", "clip_fraction", "amax_drift", "scale_drift",
    // "global_scale_drift", "block_distance".
    void setQuantity(const QString& quantity);
    bool selectRun(qint64 id);
    HeatmapPlot* heatmap() const { return m_heatmap; }
    QString warningText() const;
    // Rebuilds the heatmap now instead of on the coalescing timer (tests, screenshots).
    void flush();

private:
    struct Series {
        std::vector<double> steps, values;
    };
    // run -> series name (after "flight/") -> points
    using RunData = std::map<QString, Series>;

    void scheduleRefresh();
    void refresh();
    void updateRunChoices();

    QList<QPair<qint64, QString>> m_runs;
    QMap<qint64, RunData> m_data;
    QComboBox* m_quantity = nullptr;
    QComboBox* m_run = nullptr;
    QLabel* m_warning = nullptr;
    QLabel* m_hint = nullptr;
    HeatmapPlot* m_heatmap = nullptr;
    QTimer m_refresh;
};

}  // namespace ql
