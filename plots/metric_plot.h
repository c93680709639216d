// SPDX-License-Identifier: GPL-3.0-or-later
// Live training curves: metric value against optimizer step for several runs overlaid (loss, KL
// to the teacher, learning rate, gradient norm, eval metrics). Plain vectors in, no engine types.
//
// Built for streaming (after PlotJuggler's plotjuggler_app/mainwindow.cpp): appendPoints() only
// stores the new points, in O(new points), and marks the plot dirty; a single-shot timer replots
// at most 30 times a second with rpQueuedReplot. Curves keep every point (1 M per curve is fine):
// QCustomPlot's adaptive sampling draws ~a few points per pixel column. GUI thread only: a
// training worker hands its batches over with a queued signal (docs STYLE.md, threads).
//
// The widget is a toolbar row (Log y, Smoothing slider, Follow, Reset zoom) above a QCustomPlot.
// Mouse: drag pans x (Ctrl+drag pans both axes), wheel zooms x (Ctrl+wheel zooms y), double-click
// resets the view and turns Follow back on, a legend click hides/shows a series, hovering shows a
// crosshair listing each visible series' value there. Right click: export, Log y, Reset zoom.
#pragma once

#include <QColor>
#include <QElapsedTimer>
#include <QString>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <memory>
#include <vector>

#include "plots/plot_style.h"

class QCheckBox;
class QCPAbstractLegendItem;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPLegend;
class QCPTextElement;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QSlider;
class QToolButton;
class QWheelEvent;

namespace ql {

class FlowLayout;

class MetricPlot : public QWidget {
    Q_OBJECT
public:
    explicit MetricPlot(QWidget* parent = nullptr);
    ~MetricPlot() override;

    // Adds an empty curve named "<run> · <metric>" and returns its id (never reused). An invalid
    // `color` picks the run's colour from the series palette (one colour per distinct run name);
    // when several metrics share the plot, the second, third, … metric is dashed, dotted, ….
    int addSeries(const QString& run, const QString& metric, const QColor& color = {});
    // Appends points to curve `id`. `steps` ascending and after the curve's last step (otherwise
    // the curve is re-sorted, O(curve length)); sizes must match (extra entries are ignored).
    // NaN and ±Inf values are kept: drawn as a gap with a marker at the bottom of the plot and
    // listed as "nan"/"inf". Never replots directly. Unknown ids are ignored.
    void appendPoints(int id, const std::vector<double>& steps, const std::vector<double>& values);
    // Replaces all points of curve `id` (same rules).
    void setSeriesData(int id, std::vector<double> steps, std::vector<double> values);
    void removeSeries(int id);
    void clear();

    // Logarithmic y axis; values ≤ 0 are not drawn while it is on (the data are kept).
    void setLogY(bool on);
    bool logY() const { return m_logY; }
    // EMA smoothing weight in [0, 0.999] (clamped), TensorBoard's debiased EMA
    // (tensorboard/components/vz_line_chart2/line-chart.ts, resmoothDataset):
    //   last = last·α + (1−α)·v;  n += 1;  smoothed = last / (1 − αⁿ)
    // over finite values only (a NaN stays NaN and does not disturb the average). 0 = off. While
    // on, the raw curve is drawn faint behind the smoothed one.
    void setSmoothing(double alpha);
    double smoothing() const { return m_alpha; }
    // While on, the x axis spans all data up to the newest step and y fits the visible curves;
    // a user zoom or pan turns it off, a double-click or Reset zoom turns it on again.
    void setFollow(bool on);
    bool follow() const { return m_follow; }
    void setTitle(const QString& title);
    void setXLabel(const QString& label);
    void setYLabel(const QString& label);
    // Proposed base name for exported files ("training-loss").
    void setExportName(const QString& name) { m_exportName = name; }
    // The name of the x values in csv() (default "step"; "block" for curves over depth).
    void setKeyName(const QString& name) { m_keyName = name; }
    // Fits both axes to the visible data and turns Follow on.
    void resetZoom();

    // Series visibility (the legend click toggles it).
    void setSeriesVisible(int id, bool visible);
    bool isSeriesVisible(int id) const;
    int seriesCount() const { return static_cast<int>(m_series.size()); }
    // Whether the chart shows its "no data" note (no curve has a point yet).
    bool showsNoData() const;
    // Raw points / smoothed values of curve `id` as stored (smoothed is empty while smoothing is
    // off). NaN entries are NaN.
    const std::vector<double>& seriesSteps(int id) const;
    const std::vector<double>& seriesValues(int id) const;
    std::vector<double> smoothedValues(int id) const;
    // How many NaN/±Inf values curve `id` has received.
    int nonFiniteCount(int id) const;
    // The graph drawing the raw curve of `id` (its data container holds what is drawn: values
    // hidden by the log axis are NaN there); nullptr for unknown ids.
    QCPGraph* rawGraph(int id) const;
    QCPGraph* smoothedGraph(int id) const;

    // Header "<key name>,<run>/<metric>,…" (then "<run>/<metric> (smoothed)" columns while smoothing
    // is on); one row per distinct step of any curve; a cell is empty where that curve has no
    // point, "nan"/"inf"/"-inf" for non-finite values.
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }
    // The tool bar's rows at the plot's current width (1 when wide, 2 when its controls wrap).
    int toolbarRows() const;
    // Replots that actually happened (QCustomPlot::afterReplot), for the coalescing test.
    int replotCount() const { return m_replotCount; }
    // True while appended points wait for the coalescing timer (tests wait for it to fire).
    bool replotPending() const { return m_replotTimer.isActive(); }

    // The crosshair as if the mouse were at `pos` (customPlot() coordinates): moves the line and
    // returns its text, empty outside the axis rect or without data. Hovering does the same.
    QString crosshairAt(const QPointF& pos);
    QString crosshairText() const;
    void hideCrosshair();

Q_SIGNALS:
    void followChanged(bool on);
    void logYChanged(bool on);
    void smoothingChanged(double alpha);
    void seriesVisibilityChanged(int id, bool visible);

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct Series;

    Series* find(int id);
    const Series* find(int id) const;
    double shown(double v) const;
    void extendSmoothed(Series& s);
    void fillGraphs(Series& s, size_t from);
    void replaceData(Series& s, std::vector<double> steps, std::vector<double> values);
    void restyleSeries();
    void rebuildLegend();
    void restyle();
    void markDirty();
    void flush();
    void fitX();
    void fitY();
    void withProgrammaticRange(const std::function<void()>& change);
    void onWheel(QWheelEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);
    void onDoubleClick(QMouseEvent* event);
    void onLegendClick(QCPLegend* legend, QCPAbstractLegendItem* item, QMouseEvent* event);
    void onUserRangeChange();
    void showContextMenu(const QPoint& pos);

    QCustomPlot* m_plot = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPItemStraightLine* m_crossLine = nullptr;
    QCPItemText* m_crossText = nullptr;
    QCPItemText* m_emptyText = nullptr;
    QCheckBox* m_logYBox = nullptr;
    QSlider* m_smoothingSlider = nullptr;
    QLabel* m_smoothingLabel = nullptr;
    QCheckBox* m_followButton = nullptr;
    QToolButton* m_resetButton = nullptr;
    FlowLayout* m_toolbar = nullptr;

    std::vector<std::unique_ptr<Series>> m_series;
    QStringList m_runs;  // first-seen order, picks the palette colour
    int m_nextId = 0;
    bool m_logY = false;
    double m_alpha = 0.0;
    bool m_follow = true;
    bool m_settingRange = false;
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("metrics");
    QString m_keyName = QStringLiteral("step");

    QTimer m_replotTimer;
    QElapsedTimer m_sinceReplot;
    int m_replotCount = 0;
};

}  // namespace ql
