// SPDX-License-Identifier: GPL-3.0-or-later
// Values with confidence intervals, for the Experiments view. Plain values in, no engine types.
//
// Three modes:
// - setBars(): one bar per category (an experiment's cells, or its paired differences) with a
//   whisker from `low` to `high` (a 95 % interval); a NaN bound draws no whisker. A zero line is
//   drawn when values straddle zero (differences).
// - setCurves(): lines over x with whiskers per point (one curve per token budget of the
//   QAT-fraction sweep) and vertical marker lines (the planner's predicted fraction per budget)
//   in the colour of their curve.
// - setPoints(): a scatter with vertical whiskers (the accuracy-vs-bits frontier: x = effective
//   bits per parameter, y = the metric), horizontal whiskers where a point's x has an interval
//   (the bits a mixed plan came to across replicates), and the Pareto front through the points
//   no other point beats at fewer bits. setLogScale draws its y axis logarithmic (KL spans
//   decades) when every value is positive; a whisker reaching 0 or below then runs to the axis'
//   lower edge. Points are clickable: pointClicked(index); setSelectedPoint rings one.
//   Groups of points (uniform recipes, mixed plans per menu) get their own marks and legend entries.
// Wheel/drag zoom and pan, double-click resets; right click: Save as PNG/SVG/PDF, Copy data as CSV.
#pragma once

#include <QPoint>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <limits>

#include "plots/plot_style.h"

class QCPItemText;
class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;
class QResizeEvent;

namespace ql {

class IntervalPlot : public QWidget {
    Q_OBJECT
public:
    struct Item {
        QString label;
        double x = 0;     // setCurves / setPoints: the position; setBars: ignored (categories)
        double value = 0;
        double low = 0, high = 0;  // the interval; NaN = none
        // setPoints: an interval of x (NaN = none): the bits per parameter of a mixed plan differ
        // from replicate to replicate, since each replicate's search makes its own plan.
        double xLow = std::numeric_limits<double>::quiet_NaN(), xHigh = std::numeric_limits<double>::quiet_NaN();
        QString tooltip;
        int group = 0;  // setPoints: which of its groups (mark and legend entry) the point belongs to
    };
    struct Curve {
        QString name;
        QVector<Item> points;  // in x order
    };
    struct Marker {
        QString label;
        double x = 0;
        int curve = -1;  // coloured as this curve (-1: the muted colour)
        bool solid = false;  // a measured value (solid) rather than a prediction (dashed)
    };
    // What is drawn, for tests: per whisker its x (bars: the category index) and the mean and
    // bounds read back from the plot's error-bar data.
    struct DrawnInterval {
        double x = 0, value = 0, low = 0, high = 0;
    };

    explicit IntervalPlot(QWidget* parent = nullptr);

    void setBars(const QVector<Item>& bars);
    void setCurves(const QVector<Curve>& curves, const QVector<Marker>& markers = {});
    // Kept in x order (sorted here, stably): indices (pointClicked, pointPosition) are of that order.
    // `groups` names the kinds of point (Item::group indexes it): each is drawn with its own mark
    // and colour and has a legend entry; none or one: one kind, "mean, 95 % CI".
    void setPoints(const QVector<Item>& points, bool higherIsBetter = true, const QStringList& groups = {});
    QStringList pointGroups() const { return m_groups; }
    QVector<Item> points() const { return m_points; }
    void clear(const QString& message = {});

    void setTitle(const QString& title);
    void setAxisLabels(const QString& x, const QString& y);
    void setExportName(const QString& name) { m_exportName = name; }
    // Points mode: a logarithmic value axis (when every value is > 0; else linear).
    void setLogScale(bool on);
    bool logScaleDrawn() const;

    QVector<DrawnInterval> drawnIntervals() const;
    // Points mode: the horizontal whiskers, as x (the point's x), value, low and high of x.
    QVector<DrawnInterval> drawnXIntervals() const;
    int pointCount() const { return static_cast<int>(m_points.size()); }
    // Points mode: the pixel position (customPlot() coordinates) of point `index`, the point
    // within a few pixels of `pos` (-1 if none), the points on the Pareto front (indices).
    QPointF pointPosition(int index) const;
    int pointAt(const QPointF& pos) const;
    QVector<int> paretoFront() const { return m_front; }
    void setSelectedPoint(int index);
    int selectedPoint() const { return m_selected; }
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }

Q_SIGNALS:
    void pointClicked(int index);

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    enum class Mode { Empty, Bars, Curves, Points };
    void rebuild();
    void restyle();
    void resetZoom();
    void stackPointLabels();
    void onMouseRelease(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);
    void showContextMenu(const QPoint& pos);

    QCustomPlot* m_plot = nullptr;
    QCPLayoutGrid* m_header = nullptr;  // title and legend row (plots/plot_header.h)
    QCPTextElement* m_title = nullptr;
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("intervals");
    QString m_xLabel, m_yLabel, m_message;
    Mode m_mode = Mode::Empty;
    QVector<Item> m_bars;
    QVector<Curve> m_curves;
    QVector<Marker> m_markers;
    QVector<Item> m_points;
    QStringList m_groups;
    QVector<int> m_front;
    QVector<QCPItemText*> m_pointLabels;  // per point, owned by the plot
    bool m_higherIsBetter = true;
    bool m_logScale = false;
    int m_selected = -1;
    QPoint m_pressPos;
};

}  // namespace ql
