// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/interval_plot.h"

#include <QEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>
#include <utility>
#include <cmath>
#include <limits>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"
#include "plots/series_palette.h"

namespace ql {
namespace {

constexpr double kBarWidth = 0.6;
constexpr double kPickRadiusPx = 9;  // how near a click must be to a point to select it
constexpr int kMaxCategoryChars = 40;  // slanted when they do not fit under their bar
constexpr int kLegendColumns = 4;  // at most, side by side (fewer where the plot is narrow)

bool finite(double v) { return std::isfinite(v); }

// The error-bar data of an item: distances below and above the value; no whisker for NaN bounds.
QCPErrorBarsData whisker(const IntervalPlot::Item& it) {
    if (!finite(it.low) || !finite(it.high) || !finite(it.value)) return QCPErrorBarsData(0, 0);
    return QCPErrorBarsData(std::max(0.0, it.value - it.low), std::max(0.0, it.high - it.value));
}

QCPErrorBars* addWhiskers(QCustomPlot* plot, QCPAbstractPlottable* on, const QVector<IntervalPlot::Item>& items,
                          const QColor& colour) {
    auto* bars = new QCPErrorBars(plot->xAxis, plot->yAxis);
    bars->setDataPlottable(on);
    QVector<double> minus, plus;
    for (const auto& it : items) {
        const QCPErrorBarsData w = whisker(it);
        minus.push_back(w.errorMinus);
        plus.push_back(w.errorPlus);
    }
    bars->setData(minus, plus);
    bars->setWhiskerWidth(10);
    bars->setPen(QPen(colour, 1.4));
    return bars;
}

void extend(double& lo, double& hi, double v) {
    if (!finite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
}

void padRange(QCPAxis* axis, double lo, double hi, bool includeZero) {
    if (includeZero) extend(lo, hi, 0.0);
    if (!(lo <= hi)) lo = 0, hi = 1;
    double pad = (hi - lo) * 0.08;
    if (pad <= 0) pad = std::max(std::abs(hi) * 0.1, 1e-3);
    axis->setRange(includeZero && lo >= 0 ? 0 : lo - pad, hi + pad);
}

}  // namespace

IntervalPlot::IntervalPlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("intervalCustomPlot"));
    m_plot->setMinimumSize(240, 160);
    m_plot->setMouseTracking(true);
    m_plot->setAutoAddPlottableToLegend(false);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setAntialiasedElements(QCP::aeItems | QCP::aePlottables);
    layout->addWidget(m_plot);
    PlotHeaderOptions header;
    header.titleSideMargin = 10;
    header.titleStretch = 2.0;
    header.legendStretch = 1.0;
    const PlotHeader inserted = insertPlotHeader(m_plot, header);
    m_header = inserted.grid;
    m_title = inserted.title;
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(4);
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { m_pressPos = e->pos(); });
    connect(m_plot, &QCustomPlot::mouseRelease, this, &IntervalPlot::onMouseRelease);
    connect(m_plot, &QCustomPlot::mouseMove, this, &IntervalPlot::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetZoom(); });
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        if (m_mode == Mode::Points) stackPointLabels();
    });
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &IntervalPlot::showContextMenu);
    restyle();
}

void IntervalPlot::setBars(const QVector<Item>& bars) {
    m_mode = Mode::Bars;
    m_bars = bars;
    m_curves.clear();
    m_points.clear();
    m_groups.clear();
    m_front.clear();
    m_selected = -1;
    rebuild();
}

void IntervalPlot::setCurves(const QVector<Curve>& curves, const QVector<Marker>& markers) {
    m_mode = Mode::Curves;
    m_curves = curves;
    m_markers = markers;
    m_bars.clear();
    m_points.clear();
    m_groups.clear();
    m_front.clear();
    m_selected = -1;
    rebuild();
}

void IntervalPlot::setPoints(const QVector<Item>& points, bool higherIsBetter, const QStringList& groups) {
    m_mode = Mode::Points;
    m_points = points;
    m_groups = groups;
    // In x order, as the graph keeps its data: point i is data point i (whiskers, clicks).
    std::stable_sort(m_points.begin(), m_points.end(), [](const Item& a, const Item& b) { return a.x < b.x; });
    m_higherIsBetter = higherIsBetter;
    m_bars.clear();
    m_curves.clear();
    m_selected = -1;
    // The front: in order of x, every point that beats all points at fewer (or equal) bits.
    QVector<int> order;
    for (int i = 0; i < m_points.size(); ++i)
        if (finite(m_points[i].x) && finite(m_points[i].value)) order.push_back(i);
    // At equal bits the better point comes first, so that the worse one (which it dominates) is
    // not on the front.
    std::stable_sort(order.begin(), order.end(), [this](int a, int b) {
        if (m_points[a].x != m_points[b].x) return m_points[a].x < m_points[b].x;
        return m_higherIsBetter ? m_points[a].value > m_points[b].value : m_points[a].value < m_points[b].value;
    });
    m_front.clear();
    double best = std::numeric_limits<double>::quiet_NaN();
    for (int i : order) {
        const double v = m_points[i].value;
        if (std::isnan(best) || (m_higherIsBetter ? v > best : v < best)) {
            m_front.push_back(i);
            best = v;
        }
    }
    rebuild();
}

void IntervalPlot::clear(const QString& message) {
    m_mode = Mode::Empty;
    m_message = message;
    m_bars.clear();
    m_curves.clear();
    m_points.clear();
    m_groups.clear();
    m_front.clear();
    m_selected = -1;
    rebuild();
}

void IntervalPlot::setTitle(const QString& title) {
    m_title->setText(title);
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, kLegendColumns);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void IntervalPlot::setAxisLabels(const QString& x, const QString& y) {
    m_xLabel = x;
    m_yLabel = y;
    m_plot->xAxis->setLabel(x);
    m_plot->yAxis->setLabel(y);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void IntervalPlot::rebuild() {
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_pointLabels.clear();
    m_plot->legend->setVisible(false);
    m_plot->xAxis->setLabel(m_xLabel);
    m_plot->yAxis->setLabel(m_yLabel);
    m_plot->xAxis->setTickLabelRotation(0);
    m_plot->axisRect()->setMinimumMargins(QMargins());  // bars with slanted labels widen it
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    m_plot->yAxis->setScaleType(QCPAxis::stLinear);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    double ylo = std::numeric_limits<double>::infinity(), yhi = -ylo;
    double xlo = ylo, xhi = -ylo;
    auto extendItem = [&](const Item& it) {
        extend(ylo, yhi, it.value);
        extend(ylo, yhi, it.low);
        extend(ylo, yhi, it.high);
    };

    if (m_mode == Mode::Empty) {
        auto* text = new QCPItemText(m_plot);
        text->position->setType(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(0.5, 0.5);
        text->setText(m_message.isEmpty() ? tr("no data") : m_message);
        text->setColor(m_style.muted);
        text->setFont(m_style.font);
        m_plot->xAxis->setRange(0, 1);
        m_plot->yAxis->setRange(0, 1);
    } else if (m_mode == Mode::Bars) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setWidth(kBarWidth);
        QColor fill = m_style.primary;
        fill.setAlpha(150);
        bars->setBrush(fill);
        bars->setPen(QPen(m_style.primary, 1));
        QVector<double> keys, values;
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        int longest = 0, first = 0;
        for (int i = 0; i < m_bars.size(); ++i) {
            keys.push_back(i);
            values.push_back(finite(m_bars[i].value) ? m_bars[i].value : 0.0);
            QString label = m_bars[i].label;
            // Elided in the middle: labels of one comparison differ at their end ("… @ INT4").
            if (label.size() > kMaxCategoryChars)
                label = label.left(kMaxCategoryChars / 2 - 1) + QChar(0x2026) + label.right(kMaxCategoryChars / 2);
            const int width = QFontMetrics(m_style.font).horizontalAdvance(label);
            longest = std::max(longest, width);
            if (i == 0) first = width;
            ticker->addTick(i, label);
            extendItem(m_bars[i]);
        }
        bars->setData(keys, values, true);
        addWhiskers(m_plot, bars, m_bars, m_style.text);
        m_plot->xAxis->setTicker(ticker);
        // Labels side by side while they fit under their bar, else slanted.
        const double perBar = m_plot->axisRect()->width() / std::max<double>(1, m_bars.size() + 0.4);
        if (longest > perBar * 0.95) {
            m_plot->xAxis->setTickLabelRotation(-30);
            // A slanted label runs left of its bar: the first one needs room left of the plot
            // (cos 30° of its width, less the 0.7 bar widths before the first bar).
            const int need = static_cast<int>(0.87 * first - 0.7 * perBar) + 8;
            m_plot->axisRect()->setMinimumMargins(QMargins(std::max(0, need), 0, 0, 0));
        }
        m_plot->xAxis->setRange(-0.7, m_bars.size() - 0.3);
        if (ylo < 0 && yhi > 0) {
            auto* zero = new QCPItemStraightLine(m_plot);
            zero->point1->setCoords(0, 0);
            zero->point2->setCoords(1, 0);
            zero->setPen(QPen(m_style.axis, 1, Qt::DashLine));
        }
        padRange(m_plot->yAxis, ylo, yhi, true);
    } else if (m_mode == Mode::Curves) {
        for (int c = 0; c < m_curves.size(); ++c) {
            const QColor colour = seriesColor(m_style, c);
            auto* g = m_plot->addGraph();
            g->setName(m_curves[c].name);
            g->setPen(QPen(colour, 2));
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, 7));
            QVector<double> xs, ys;
            for (const Item& p : m_curves[c].points) {
                xs.push_back(p.x);
                ys.push_back(p.value);
                extend(xlo, xhi, p.x);
                extendItem(p);
            }
            g->setData(xs, ys, true);
            g->addToLegend();
            addWhiskers(m_plot, g, m_curves[c].points, colour);
        }
        // Where the markers will lie in the x range: labels right of the middle read leftwards,
        // so a marker at the last fraction keeps its label inside the plot.
        double mlo = xlo, mhi = xhi;
        for (const Marker& m : m_markers) extend(mlo, mhi, m.x);
        for (const Marker& m : m_markers) {
            const bool leftwards = mhi > mlo && m.x > mlo + 0.6 * (mhi - mlo);
            const QColor colour = m.curve >= 0 ? seriesColor(m_style, m.curve) : m_style.muted;
            auto* line = new QCPItemStraightLine(m_plot);
            line->point1->setCoords(m.x, 0);
            line->point2->setCoords(m.x, 1);
            line->setPen(QPen(colour, 1.5, m.solid ? Qt::SolidLine : Qt::DashLine));
            auto* text = new QCPItemText(m_plot);
            text->position->setTypeX(QCPItemPosition::ptPlotCoords);
            text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
            // Labels of one curve's two markers (predicted, measured) one above the other.
            text->position->setCoords(m.x, 0.02 + 0.07 * (2 * std::max(0, m.curve) + (m.solid ? 1 : 0)));
            text->setPositionAlignment((leftwards ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
            text->setPadding(leftwards ? QMargins(0, 0, 4, 0) : QMargins(4, 0, 0, 0));
            text->setText(m.label);
            text->setColor(colour);
            text->setFont(m_style.font);
            extend(xlo, xhi, m.x);
        }
        m_plot->legend->setVisible(!m_curves.isEmpty());
        padRange(m_plot->xAxis, xlo, xhi, false);
        padRange(m_plot->yAxis, ylo, yhi, false);
    } else {
        // The front first, under the points.
        if (m_front.size() > 1) {
            auto* front = m_plot->addGraph();
            front->setName(tr("Pareto front"));
            QColor c = m_style.secondary;
            front->setPen(QPen(c, 1.5, Qt::DashLine));
            QVector<double> xs, ys;
            for (int i : m_front) xs.push_back(m_points[i].x), ys.push_back(m_points[i].value);
            front->setData(xs, ys, true);
            front->addToLegend();
        }
        // One graph holds every point in index order with its whisker (drawnIntervals reads it);
        // with groups its marks are drawn by one graph per group on top, each with a legend entry.
        const bool grouped = m_groups.size() > 1;
        auto* g = m_plot->addGraph();
        g->setName(tr("mean, 95 % CI"));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(grouped ? QCPScatterStyle(QCPScatterStyle::ssNone)
                                   : QCPScatterStyle(QCPScatterStyle::ssDisc, m_style.primary, m_style.primary, 8));
        // On a log axis a whisker whose low end is at or below zero (a KL interval clipped at 0)
        // runs down to the axis' lower edge, a decade below the smallest positive number drawn.
        const bool log = logScaleDrawn();
        double floor = std::numeric_limits<double>::infinity();
        if (log)
            for (const Item& p : m_points)
                for (double v : {p.value, p.low, p.high})
                    if (finite(v) && v > 0) floor = std::min(floor, v / 10);
        QVector<Item> whiskers = m_points;
        QVector<double> xs, ys;
        for (Item& p : whiskers) {
            if (log && finite(p.low) && p.low <= 0) p.low = floor;
            xs.push_back(p.x);
            ys.push_back(p.value);
            extend(xlo, xhi, p.x);
            extendItem(p);
        }
        g->setData(xs, ys, true);
        if (!grouped) g->addToLegend();
        else g->removeFromLegend();
        addWhiskers(m_plot, g, whiskers, grouped ? m_style.muted : m_style.primary);
        // Horizontal whiskers where x has an interval (mixed plans' bits across replicates).
        if (std::any_of(m_points.begin(), m_points.end(), [](const Item& p) { return finite(p.xLow) && finite(p.xHigh); })) {
            auto* spread = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
            spread->setDataPlottable(g);
            spread->setErrorType(QCPErrorBars::etKeyError);
            QVector<double> minus, plus;
            for (const Item& p : m_points) {
                const bool has = finite(p.xLow) && finite(p.xHigh);
                minus.push_back(has ? std::max(0.0, p.x - p.xLow) : 0.0);
                plus.push_back(has ? std::max(0.0, p.xHigh - p.x) : 0.0);
                if (has) extend(xlo, xhi, p.xLow), extend(xlo, xhi, p.xHigh);
            }
            spread->setData(minus, plus);
            spread->setWhiskerWidth(8);
            spread->setPen(QPen(grouped ? m_style.muted : m_style.primary, 1.4));
            spread->setName(tr("bits per parameter, 95 % CI"));
            spread->removeFromLegend();
        }
        for (int k = 0; grouped && k < m_groups.size(); ++k) {
            // Shapes as well as colours, so the kinds stay apart in greyscale prints.
            static const QCPScatterStyle::ScatterShape shapes[] = {QCPScatterStyle::ssDisc, QCPScatterStyle::ssTriangle,
                                                                   QCPScatterStyle::ssSquare, QCPScatterStyle::ssDiamond,
                                                                   QCPScatterStyle::ssTriangleInverted};
            // Palette from green on: blue is the first group's, orange the Pareto front's.
            const QColor colour = k == 0 ? m_style.primary : seriesColor(m_style, k + 1);
            auto* marks = m_plot->addGraph();
            marks->setName(m_groups[k]);
            marks->setLineStyle(QCPGraph::lsNone);
            marks->setScatterStyle(QCPScatterStyle(shapes[k % 5], colour, colour, k == 0 ? 8 : 10));
            QVector<double> gx, gy;
            for (const Item& p : m_points)
                if (p.group == k) gx.push_back(p.x), gy.push_back(p.value);
            marks->setData(gx, gy, true);
            marks->addToLegend();
        }
        m_pointLabels.clear();
        for (int i = 0; i < m_points.size(); ++i) {
            auto* text = new QCPItemText(m_plot);
            text->position->setCoords(m_points[i].x, m_points[i].value);
            text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
            text->setPadding(QMargins(6, 0, 0, 2));
            text->setText(m_points[i].label);
            text->setColor(m_style.text);
            text->setFont(m_style.font);
            m_pointLabels.push_back(text);
        }
        if (m_selected >= 0 && m_selected < m_points.size()) {
            auto* ring = m_plot->addGraph();
            ring->setLineStyle(QCPGraph::lsNone);
            ring->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(m_style.highlight, 2.5), Qt::NoBrush, 16));
            ring->setData({m_points[m_selected].x}, {m_points[m_selected].value});
        }
        m_plot->legend->setVisible(!m_points.isEmpty());
        // Room on the right for the last point's label.
        if (xlo <= xhi) xhi += (xhi - xlo) * 0.12 + 0.1;
        padRange(m_plot->xAxis, xlo, xhi, false);
        if (log) {
            m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
            m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
            m_plot->yAxis->setRange(ylo / 1.5, yhi * 1.5);
        } else {
            padRange(m_plot->yAxis, ylo, yhi, false);
        }
    }
    // A legend of long entries (the frontier's kinds of point) goes under the title, not over it.
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, kLegendColumns);
    m_plot->replot();
}

void IntervalPlot::resetZoom() { rebuild(); }

void IntervalPlot::stackPointLabels() {
    // Points at (nearly) the same place would write their names over each other: each label
    // goes up by a line until it overlaps none placed before it (points in x order).
    // Labels that would leave the top of the plot (points at the best value, where they crowd)
    // are stacked downwards under their point instead, where the plot clips nothing.
    const QFontMetrics fm(m_style.font);
    const int top = m_plot->axisRect()->rect().top();
    QVector<QRect> placed;
    for (int i = 0; i < m_pointLabels.size() && i < m_points.size(); ++i) {
        const QPointF p = pointPosition(i);
        const QSize size(fm.horizontalAdvance(m_points[i].label) + 6, fm.height());
        const auto stack = [&](QRect box, int step) {
            int shift = 0;
            for (int tries = 0; tries < m_points.size(); ++tries) {
                const bool hit = std::any_of(placed.begin(), placed.end(), [&](const QRect& r) { return r.intersects(box); });
                if (!hit) break;
                shift += size.height();
                box.translate(0, step * size.height());
            }
            return std::make_pair(box, shift);
        };
        auto [box, shift] = stack(QRect(QPoint(static_cast<int>(p.x()), static_cast<int>(p.y()) - 2 - size.height()), size), -1);
        const bool below = box.top() < top;
        if (below) std::tie(box, shift) = stack(QRect(QPoint(static_cast<int>(p.x()), static_cast<int>(p.y()) + 2), size), 1);
        placed.push_back(box);
        m_pointLabels[i]->setPositionAlignment(Qt::AlignLeft | (below ? Qt::AlignTop : Qt::AlignBottom));
        m_pointLabels[i]->setPadding(below ? QMargins(6, 2 + shift, 0, 0) : QMargins(6, 0, 0, 2 + shift));
    }
}

void IntervalPlot::setLogScale(bool on) {
    if (m_logScale == on) return;
    m_logScale = on;
    if (m_mode == Mode::Points) rebuild();
}

bool IntervalPlot::logScaleDrawn() const {
    if (!m_logScale || m_mode != Mode::Points || m_points.isEmpty()) return false;
    for (const Item& p : m_points)
        if (finite(p.value) && p.value <= 0) return false;
    return std::any_of(m_points.begin(), m_points.end(), [](const Item& p) { return finite(p.value); });
}

QVector<IntervalPlot::DrawnInterval> IntervalPlot::drawnXIntervals() const {
    QVector<DrawnInterval> out;
    for (int p = 0; p < m_plot->plottableCount(); ++p) {
        auto* bars = qobject_cast<QCPErrorBars*>(m_plot->plottable(p));
        if (!bars || !bars->dataPlottable() || bars->errorType() != QCPErrorBars::etKeyError) continue;
        auto* on = bars->dataPlottable()->interface1D();
        for (int i = 0; i < bars->dataCount(); ++i) {
            const QCPErrorBarsData e = bars->data()->at(i);
            if (e.errorMinus == 0 && e.errorPlus == 0) continue;
            const double x = on->dataMainKey(i);
            out.push_back(DrawnInterval{x, on->dataMainValue(i), x - e.errorMinus, x + e.errorPlus});
        }
    }
    return out;
}

QVector<IntervalPlot::DrawnInterval> IntervalPlot::drawnIntervals() const {
    QVector<DrawnInterval> out;
    for (int p = 0; p < m_plot->plottableCount(); ++p) {
        auto* bars = qobject_cast<QCPErrorBars*>(m_plot->plottable(p));
        if (!bars || !bars->dataPlottable() || bars->errorType() == QCPErrorBars::etKeyError) continue;
        auto* on = bars->dataPlottable()->interface1D();
        for (int i = 0; i < bars->dataCount(); ++i) {
            const QCPErrorBarsData e = bars->data()->at(i);
            const double v = on->dataMainValue(i);
            out.push_back(DrawnInterval{on->dataMainKey(i), v, v - e.errorMinus, v + e.errorPlus});
        }
    }
    return out;
}

QPointF IntervalPlot::pointPosition(int index) const {
    if (m_mode != Mode::Points || index < 0 || index >= m_points.size()) return {};
    return {m_plot->xAxis->coordToPixel(m_points[index].x), m_plot->yAxis->coordToPixel(m_points[index].value)};
}

int IntervalPlot::pointAt(const QPointF& pos) const {
    int best = -1;
    double bestDistance = kPickRadiusPx;
    for (int i = 0; i < m_points.size(); ++i) {
        const QPointF p = pointPosition(i);
        const double d = std::hypot(p.x() - pos.x(), p.y() - pos.y());
        if (d <= bestDistance) best = i, bestDistance = d;
    }
    return best;
}

void IntervalPlot::setSelectedPoint(int index) {
    if (index == m_selected) return;
    m_selected = index;
    if (m_mode == Mode::Points) {
        const QCPRange x = m_plot->xAxis->range(), y = m_plot->yAxis->range();
        rebuild();
        m_plot->xAxis->setRange(x);  // keep the user's zoom
        m_plot->yAxis->setRange(y);
        m_plot->replot();
    }
}

void IntervalPlot::onMouseRelease(QMouseEvent* event) {
    if (m_mode != Mode::Points || event->button() != Qt::LeftButton) return;
    if ((event->pos() - m_pressPos).manhattanLength() > 4) return;  // a drag, not a click
    const int index = pointAt(event->pos());
    if (index < 0) return;
    setSelectedPoint(index);
    emit pointClicked(index);
}

void IntervalPlot::onMouseMove(QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton) return;
    const Item* item = nullptr;
    if (m_mode == Mode::Points) {
        const int i = pointAt(event->pos());
        if (i >= 0) item = &m_points[i];
    } else if (m_mode == Mode::Bars) {
        const int i = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(event->pos().x())));
        if (i >= 0 && i < m_bars.size()) item = &m_bars[i];
    }
    if (!item) {
        showPlotToolTip(m_plot, event, QString());
        return;
    }
    QString text = QStringLiteral("<b>%1</b><br>%2").arg(item->label.toHtmlEscaped()).arg(item->value, 0, 'g', 5);
    if (finite(item->low) && finite(item->high))
        text += QStringLiteral(" [%1, %2]").arg(item->low, 0, 'g', 5).arg(item->high, 0, 'g', 5);
    if (!item->tooltip.isEmpty()) text += QStringLiteral("<br>") + item->tooltip.toHtmlEscaped();
    showPlotToolTip(m_plot, event, text);
}

QString IntervalPlot::csv() const {
    QStringList lines{QStringLiteral("series,label,x,value,ci_low,ci_high")};
    auto row = [&](const QString& series, const Item& it) {
        lines << QStringList{csvField(series), csvField(it.label), QString::number(it.x, 'g', 10),
                             QString::number(it.value, 'g', 10), QString::number(it.low, 'g', 10),
                             QString::number(it.high, 'g', 10)}
                     .join(QLatin1Char(','));
    };
    for (const Item& it : m_bars) row(QString(), it);
    for (const Curve& c : m_curves)
        for (const Item& it : c.points) row(c.name, it);
    for (const Item& it : m_points) row(m_groups.size() > 1 ? m_groups.value(it.group) : QString(), it);
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

void IntervalPlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.addSeparator();
    menu.addAction(tr("Reset zoom"), this, [this] { resetZoom(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

void IntervalPlot::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);  // the layout has already resized the plot
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, kLegendColumns);
}

void IntervalPlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

void IntervalPlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    rebuild();
}

}  // namespace ql
