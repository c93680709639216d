// SPDX-License-Identifier: GPL-3.0-or-later
// Bar charts for the compare, sensitivity and outlier views. Plain values in, no engine types.
//
// Two modes:
// - setBars(): one bar per label (per-layer sensitivity, per-channel absmax), optionally sorted;
//   highlighted bars are drawn in the accent colour and the legend says what that means
//   (setHighlightLabel: "kept in higher precision", "best", …); setLabelTop(n) writes the names
//   of the n largest bars above them (outliers among thousands of channels).
// - setGroupedBars(): categories × groups side by side (metrics × runs), one colour per group,
//   the best bar of each category outlined in the accent colour and starred (setHigherIsBetter).
// Category labels never clip: they are rotated when they do not fit side by side, elided beyond
// ~150 px (beside horizontal bars: up to 35% of the width) at the start for module paths
// ("…layers.12.mlp.down_proj") and at the end otherwise, with the full text in the hover
// tooltip, and thinned to every k-th bar when bars are narrower than a line of text. Wheel/drag zoom and pan along the categories,
// double-click resets. Right click: Save as PNG/SVG/PDF, Copy data as CSV, Reset zoom.
#pragma once

#include <QColor>
#include <QPoint>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "plots/plot_style.h"

class QCPAxis;
class QCPAxisTickerText;
class QCPBars;
class QCPItemText;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;

namespace ql {

class BarChart : public QWidget {
    Q_OBJECT
public:
    struct Bar {
        QString label;
        double value = 0.0;
        bool highlighted = false;
        QString tooltip;  // extra hover text (what the value means for this bar)
    };

    explicit BarChart(QWidget* parent = nullptr);

    // One bar per entry, in the given order or sorted by value, largest first (stable; NaN
    // last; a NaN bar is drawn as a "nan" mark at zero).
    void setBars(const QVector<Bar>& bars, bool sortDescending = false);
    // values[g][c] is group g's value in category c (e.g. groups = runs, categories = metrics);
    // missing entries and NaN are drawn as no bar. One colour per group; the best group of each
    // category (see setHigherIsBetter) is outlined and starred, unless several tie for it.
    void setGroupedBars(const QStringList& categories, const QStringList& groups,
                        const QVector<QVector<double>>& values);
    // Grouped mode: a whisker on each bar from lows[g][c] to highs[g][c] (an interval, e.g. a
    // 95 % Wilson interval of a success rate); NaN = no whisker. setGroupedBars clears them.
    void setGroupedIntervals(const QVector<QVector<double>>& lows, const QVector<QVector<double>>& highs);
    // The whiskers as drawn: per group, per category (low, high); NaN where there is none.
    QVector<QVector<QPair<double, double>>> groupedIntervals() const;
    void setHigherIsBetter(bool higherIsBetter);
    bool higherIsBetter() const { return m_higherIsBetter; }
    // Value-axis label, also the CSV column name ("sensitivity (ΔKL)").
    void setValueLabel(const QString& label);
    // Legend text for the highlighted bars (setBars) or the best bars (grouped); defaults to
    // "highlighted" / "best".
    void setHighlightLabel(const QString& label);
    // Writes the labels of the n largest bars above them (setBars mode); 0 = none.
    void setLabelTop(int n);
    // Bars grow to the right and categories run top to bottom (long layer names).
    void setHorizontal(bool horizontal);
    bool horizontal() const { return m_horizontal; }
    void setTitle(const QString& title);
    void setExportName(const QString& name) { m_exportName = name; }
    void resetZoom();

    // The bars as drawn (setBars mode, after sorting).
    QVector<Bar> bars() const { return m_bars; }
    // Number of categories: bars (setBars) or categories (grouped).
    int categoryCount() const;
    // Index of the best group in `category` (grouped mode), -1 if none or a tie at the top.
    int bestGroup(int category) const;
    // Pixel position (customPlot() coordinates) of the middle of bar `index` (grouped mode:
    // category `index`, group `group`), and the fill colour it is drawn with.
    QPointF barPosition(int index, int group = 0) const;
    QColor barColor(int index, int group = 0) const;
    // The bar under a customPlot() position (anywhere in its column counts, so tiny bars can be
    // clicked): its index (grouped: the category; `group` receives the group), or -1.
    int barIndexAt(const QPointF& pos, int* group = nullptr) const;
    // The category labels the axis currently shows (after thinning and elision) and the
    // rotation in degrees; tests check that nothing is clipped.
    QStringList shownCategoryLabels() const;
    double categoryLabelRotation() const;

    // setBars: "label,<value label>,highlighted" rows (1/0); grouped: "category,<group>,…", with
    // intervals "category,<group>,<group> low,<group> high,…".
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }

Q_SIGNALS:
    void barClicked(int index);
    void barClicked(const QString& label);
    // Grouped mode, in addition to barClicked(category) / barClicked(category name).
    void groupedBarClicked(int category, int group);

protected:
    void changeEvent(QEvent* event) override;

private:
    enum class Mode { Bars, Grouped };

    QCPAxis* keyAxis() const;
    QCPAxis* valueAxis() const;
    double barWidth() const;
    double groupOffset(int group) const;
    double valueAt(int index, int group) const;
    QString fullLabel(int index) const;
    void computeBest();
    void rebuild();
    void restyle();
    void updateCategoryTicks();
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);
    void showContextMenu(const QPoint& pos);

    QCustomPlot* m_plot = nullptr;
    QCPTextElement* m_title = nullptr;
    QSharedPointer<QCPAxisTickerText> m_categoryTicker;
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("bars");

    Mode m_mode = Mode::Bars;
    QVector<Bar> m_bars;
    QStringList m_categories;
    QStringList m_groups;
    QVector<QVector<double>> m_values;  // [group][category]
    QVector<QVector<double>> m_lows, m_highs;  // [group][category], empty: no intervals
    QVector<int> m_best;                // per category
    bool m_higherIsBetter = true;
    QString m_valueLabel;
    QString m_highlightLabel;
    int m_labelTop = 0;
    bool m_horizontal = false;

    QStringList m_elided;  // category labels elided for the axis, cached per data and limit
    int m_elidedFor = -1;  // the pixel limit m_elided was made for
    QStringList m_shownLabels;
    double m_rotation = 0;
    QVector<QCPItemText*> m_topLabels;  // largest first
    QPoint m_pressPos;
};

}  // namespace ql
