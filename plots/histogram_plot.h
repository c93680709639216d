// SPDX-License-Identifier: GPL-3.0-or-later
// The layer inspector's histogram: a distribution (weights or activations of one layer) with the
// values the chosen format can represent there drawn over it as a grid, the clip thresholds, the
// outliers, and optionally a second distribution (e.g. after QAT/QAD) as an outline.
// Plain vectors in: the caller bins the data and scales the grid; nothing here knows a format.
#pragma once

#include <QString>
#include <QWidget>

#include <vector>

#include "plots/plot_style.h"

class QCPGraph;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QCPTextElement;
class QCustomPlot;
class QCPLayoutGrid;
class QResizeEvent;
class QMouseEvent;

namespace ql {

class HistogramPlot : public QWidget {
    Q_OBJECT
public:
    // counts[i] is the number of values in bin i; the bins have equal width and cover [lo, hi]
    // (bin i = [lo + i·w, lo + (i+1)·w), w = (hi − lo) / counts.size()). Invalid (hi <= lo, not
    // finite) or empty counts mean "no histogram". Negative and NaN counts are drawn as 0.
    struct Histogram {
        double lo = 0, hi = 0;
        std::vector<double> counts;
        QString label;
    };

    // A grid denser than this in the visible x range is thinned to every k-th value.
    static constexpr int kMaxGridLines = 400;
    // On the log-count axis empty bins are drawn at this height, which is also the axis floor:
    // a run of empty bins shows as a gap down to the axis, a count of 1 as a visible step.
    static constexpr double kLogZeroCount = 0.5;

    explicit HistogramPlot(QWidget* parent = nullptr);

    void setTitle(const QString& title);
    QString title() const;
    // x axis label, e.g. "weight value"; default "value".
    void setAxisLabel(const QString& label);
    // Proposed base name for exported files ("histogram-layers.0.q_proj").
    void setExportName(const QString& name) { m_exportName = name; }

    // The main distribution: a filled step outline in the primary colour. Resets the view.
    void setHistogram(const Histogram& h);
    // A second distribution drawn as an outline in another colour on the same axes (e.g. after
    // QAT/QAD); a histogram with empty counts clears it.
    void setOverlay(const Histogram& h);
    // Representable values of the format in data units (already multiplied by the scale), any
    // order; thin vertical lines over the whole height. Non-finite values are ignored. When more
    // than kMaxGridLines fall in the visible range only every k-th is drawn (counted from the
    // value nearest 0, so a symmetric grid stays symmetric) and the legend says so.
    void setGrid(const std::vector<double>& values, const QString& label);
    // Dashed verticals at the clip thresholds with the region beyond each one shaded. A NaN
    // threshold hides that side; clearClipThresholds() hides both.
    void setClipThresholds(double negative, double positive);
    void clearClipThresholds();
    // Triangles on the x axis at each value (e.g. values beyond the clip thresholds).
    void setOutliers(const std::vector<double>& values);

    // Logarithmic count axis; empty bins are drawn at kLogZeroCount (see there).
    void setLogCount(bool on);
    bool logCount() const { return m_logCount; }

    // Shows [lo, hi] on the x axis (ignored unless lo < hi, both finite). From then on (as after
    // a drag or zoom) the setters keep the x range; resetView() makes them follow the data again.
    void setXRange(double lo, double hi);
    // Fits x to the histograms, thresholds and outliers (the grid only when nothing else is
    // set), and y to the highest bin. Also on double click and in the context menu. Until the
    // user or setXRange changes the range, every setter refits; setHistogram always does.
    void resetView();

    // Everything set, unthinned, as CSV: header "series,label,x,x_end,count"; one row per bin of
    // the histogram ("histogram") and overlay ("overlay") with its edges and count, then one row
    // per grid value ("grid"), clip threshold ("clip", label "negative"/"positive") and outlier
    // ("outlier") with only x.
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }

    // What is drawn, read back from the plottables (tests use these).
    // The height of each bin of the main histogram / overlay as plotted (kLogZeroCount for an
    // empty bin on the log axis); empty when none is shown.
    std::vector<double> drawnCounts() const;
    std::vector<double> drawnOverlayCounts() const;
    // Grid lines drawn now and the thinning step k (1 = every value).
    int drawnGridLineCount() const;
    int gridStride() const { return m_gridStride; }
    int drawnOutlierCount() const;

    QSize minimumSizeHint() const override { return {260, 180}; }
    QSize sizeHint() const override { return {720, 360}; }

Q_SIGNALS:
    void logCountChanged(bool on);

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void restyle();
    void updateHistogramGraph(QCPGraph* graph, const Histogram& h) const;
    void updateGridLines();
    void placeClipLabels();
    void updateClipItems();
    void updateYRange();
    void refit();  // resetView() while following the data, else only the y range
    void updateLegend();
    void showContextMenu(const QPoint& pos);
    void showToolTip(QMouseEvent* event);
    std::vector<double> readBack(const QCPGraph* graph, const Histogram& h) const;

    QCustomPlot* m_plot = nullptr;
    QCPLayoutGrid* m_header = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPGraph* m_histogramGraph = nullptr;
    QCPGraph* m_overlayGraph = nullptr;
    QCPGraph* m_gridGraph = nullptr;      // impulses on the hidden 0..1 axis: full-height lines
    QCPGraph* m_outlierGraph = nullptr;   // on the hidden 0..1 axis, just above the x axis
    QCPGraph* m_clipLegendGraph = nullptr;  // no data: only the legend entry for the thresholds
    QCPItemStraightLine* m_clipLines[2] = {nullptr, nullptr};
    QCPItemRect* m_clipShades[2] = {nullptr, nullptr};
    QCPItemText* m_clipLabels[2] = {nullptr, nullptr};
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("histogram");

    Histogram m_histogram;
    Histogram m_overlay;
    std::vector<double> m_grid;  // sorted, finite
    QString m_gridLabel;
    size_t m_gridAnchor = 0;  // index of the grid value nearest zero
    int m_gridStride = 1;
    double m_clip[2];  // negative, positive; NaN = none
    std::vector<double> m_outliers;
    bool m_logCount = false;
    bool m_followData = true;  // x range fitted to the data, not chosen by the user
    bool m_fitting = false;    // resetView() is setting the range
};

}  // namespace ql
