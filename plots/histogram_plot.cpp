// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/histogram_plot.h"

#include <QMenu>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/data_extent.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString shortNumber(double v) { return QString::number(v, 'g', 4); }

bool isValid(const HistogramPlot::Histogram& h) {
    return !h.counts.empty() && std::isfinite(h.lo) && std::isfinite(h.hi) && h.hi > h.lo;
}

double binWidth(const HistogramPlot::Histogram& h) { return (h.hi - h.lo) / static_cast<double>(h.counts.size()); }

double cleanCount(double c) { return std::isfinite(c) && c > 0 ? c : 0.0; }

// "2nd", "3rd", "11th", "21st".
QString ordinal(int k) {
    const int lastTwo = k % 100, last = k % 10;
    const char* suffix = (lastTwo >= 11 && lastTwo <= 13) ? "th" : last == 1 ? "st" : last == 2 ? "nd" : last == 3 ? "rd" : "th";
    return QString::number(k) + QLatin1String(suffix);
}

// A triangle standing on the point, pointing up: drawn at y = 0 of the hidden axis it sits on the
// x axis without covering the tick labels. ssCustom scales the path by size / 6.
QPainterPath outlierMarkerPath() {
    QPainterPath path;
    path.moveTo(-4.5, 0);
    path.lineTo(4.5, 0);
    path.lineTo(0, -9);
    path.closeSubpath();
    return path;
}

}  // namespace

HistogramPlot::HistogramPlot(QWidget* parent) : QWidget(parent), m_clip{kNaN, kNaN} {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    // Small docks must work: the header re-flows (arrangePlotHeader) instead of widening the plot.
    m_plot->setMinimumSize(200, 140);
    layout->addWidget(m_plot);
    m_plot->setMouseTracking(true);
    m_plot->setAntialiasedElements(QCP::aeItems | QCP::aeScatters);  // plottables choose their own
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);

    QCPAxis* x = m_plot->xAxis;
    QCPAxis* y = m_plot->yAxis;
    x->setLabel(tr("value"));
    x->ticker()->setTickCount(8);
    y->setLabel(tr("count"));
    y->setNumberFormat(QStringLiteral("gb"));
    // The hidden right axis spans 0..1 over the axis rect whatever the count scale: grid lines
    // are impulses to 1 on it and outlier markers sit at 0.
    m_plot->yAxis2->setRange(0, 1);
    m_plot->yAxis2->setVisible(false);

    // Title left and legend right in a header row above the axis rect, so neither covers data.
    const PlotHeader header = insertPlotHeader(m_plot);
    m_header = header.grid;
    m_title = header.title;

    // Creation order is drawing order: grid lines behind the (translucent) histogram, so a dense
    // stretch of the grid reads as a band under the data instead of covering it; then the
    // overlay outline and the markers.
    m_gridGraph = m_plot->addGraph(x, m_plot->yAxis2);
    m_histogramGraph = m_plot->addGraph();
    m_overlayGraph = m_plot->addGraph();
    m_outlierGraph = m_plot->addGraph(x, m_plot->yAxis2);
    m_clipLegendGraph = m_plot->addGraph();
    for (QCPGraph* g : {m_histogramGraph, m_overlayGraph}) {
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setAdaptiveSampling(false);  // every bin edge must stay where it is
    }
    m_gridGraph->setLineStyle(QCPGraph::lsImpulse);
    m_gridGraph->setAdaptiveSampling(false);
    m_outlierGraph->setLineStyle(QCPGraph::lsNone);
    m_outlierGraph->setAdaptiveSampling(false);

    // Shading on the grid layer, under the histogram; lines and labels above everything.
    for (int side = 0; side < 2; ++side) {
        auto* shade = new QCPItemRect(m_plot);
        shade->setLayer(QStringLiteral("grid"));
        // The outer edge is the axis rect's edge, the inner edge the threshold in data units.
        QCPItemPosition* outer = side == 0 ? shade->topLeft : shade->bottomRight;
        QCPItemPosition* inner = side == 0 ? shade->bottomRight : shade->topLeft;
        outer->setTypeX(QCPItemPosition::ptAxisRectRatio);
        outer->setTypeY(QCPItemPosition::ptAxisRectRatio);
        outer->setCoords(side == 0 ? 0.0 : 1.0, side == 0 ? 0.0 : 1.0);
        inner->setTypeX(QCPItemPosition::ptPlotCoords);
        inner->setTypeY(QCPItemPosition::ptAxisRectRatio);
        shade->setSelectable(false);
        shade->setObjectName(side == 0 ? QStringLiteral("clip-shade-negative") : QStringLiteral("clip-shade-positive"));
        m_clipShades[side] = shade;

        auto* line = new QCPItemStraightLine(m_plot);
        line->setSelectable(false);
        line->setObjectName(side == 0 ? QStringLiteral("clip-negative") : QStringLiteral("clip-positive"));
        m_clipLines[side] = line;

        auto* label = new QCPItemText(m_plot);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        // Inside the clip range, where the top of a histogram is usually empty (placeClipLabels).
        label->setPositionAlignment(Qt::AlignTop | (side == 0 ? Qt::AlignLeft : Qt::AlignRight));
        label->setPadding(QMargins(4, 2, 4, 2));
        label->setSelectable(false);
        label->setObjectName(side == 0 ? QStringLiteral("clip-label-negative") : QStringLiteral("clip-label-positive"));
        m_clipLabels[side] = label;
    }

    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_fitting) m_followData = false;  // the user (or setXRange) chose a range: keep it
        updateGridLines();
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
    connect(m_plot, &QCustomPlot::mouseMove, this, &HistogramPlot::showToolTip);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &HistogramPlot::showContextMenu);

    // The clip labels sit inside the clip range; when the range is too narrow on screen for
    // both, they move outside it so they never overlap (checked before each draw: the pixel
    // width depends on the zoom and the widget size).
    connect(m_plot, &QCustomPlot::beforeReplot, this, &HistogramPlot::placeClipLabels);

    restyle();
    updateClipItems();
    resetView();
}

void HistogramPlot::placeClipLabels() {
    bool outside = false;
    if (!std::isnan(m_clip[0]) && !std::isnan(m_clip[1])) {
        const QCPAxis* x = m_plot->xAxis;
        const double gap = std::fabs(x->coordToPixel(m_clip[1]) - x->coordToPixel(m_clip[0]));
        double need = 4;
        for (const QCPItemText* label : m_clipLabels)
            need += QFontMetricsF(label->font()).horizontalAdvance(label->text()) + label->padding().left() + label->padding().right();
        outside = gap < need;
    }
    for (int side = 0; side < 2; ++side) {
        const bool left = (side == 0) != outside;  // inside: -t's label extends right of its line
        m_clipLabels[side]->setPositionAlignment(Qt::AlignTop | (left ? Qt::AlignLeft : Qt::AlignRight));
    }
}

void HistogramPlot::setTitle(const QString& title) {
    m_title->setText(title);
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, 3);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString HistogramPlot::title() const { return m_title->text(); }

void HistogramPlot::setAxisLabel(const QString& label) {
    m_plot->xAxis->setLabel(label);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HistogramPlot::setHistogram(const Histogram& h) {
    m_histogram = isValid(h) ? h : Histogram{};
    updateHistogramGraph(m_histogramGraph, m_histogram);
    updateLegend();
    resetView();
}

void HistogramPlot::setOverlay(const Histogram& h) {
    m_overlay = isValid(h) ? h : Histogram{};
    updateHistogramGraph(m_overlayGraph, m_overlay);
    updateLegend();
    refit();
}

void HistogramPlot::refit() {
    if (m_followData) {
        resetView();
    } else {
        updateYRange();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void HistogramPlot::updateHistogramGraph(QCPGraph* graph, const Histogram& h) const {
    // A closed step outline: up from the axis at lo, one step per bin, down at hi. lsStepLeft
    // holds each point's value until the next key, so point i sits at the left edge of bin i.
    QVector<double> keys, values;
    if (isValid(h)) {
        const double base = m_logCount ? kLogZeroCount : 0.0;
        const double w = binWidth(h);
        const size_t n = h.counts.size();
        keys.reserve(static_cast<int>(n) + 3);
        values.reserve(static_cast<int>(n) + 3);
        keys.push_back(h.lo);
        values.push_back(base);
        for (size_t i = 0; i < n; ++i) {
            const double c = cleanCount(h.counts[i]);
            keys.push_back(h.lo + static_cast<double>(i) * w);
            values.push_back(m_logCount && c <= 0 ? kLogZeroCount : c);
        }
        keys.push_back(h.hi);
        values.push_back(values.back());
        keys.push_back(h.hi);
        values.push_back(base);
    }
    graph->setData(keys, values, true);
    graph->setName(h.label);
}

std::vector<double> HistogramPlot::readBack(const QCPGraph* graph, const Histogram& h) const {
    std::vector<double> heights;
    if (!isValid(h) || graph->data()->isEmpty()) return heights;
    const double w = binWidth(h);
    const auto begin = graph->data()->constBegin(), end = graph->data()->constEnd();
    for (size_t i = 0; i < h.counts.size(); ++i) {
        const double centre = h.lo + (static_cast<double>(i) + 0.5) * w;
        // The step drawn over the bin's centre is the last point at or left of it.
        auto it = std::upper_bound(begin, end, centre,
                                   [](double key, const QCPGraphData& d) { return key < d.key; });
        heights.push_back(it == begin ? kNaN : std::prev(it)->value);
    }
    return heights;
}

std::vector<double> HistogramPlot::drawnCounts() const { return readBack(m_histogramGraph, m_histogram); }

std::vector<double> HistogramPlot::drawnOverlayCounts() const { return readBack(m_overlayGraph, m_overlay); }

void HistogramPlot::setGrid(const std::vector<double>& values, const QString& label) {
    m_grid.clear();
    for (double v : values)
        if (std::isfinite(v)) m_grid.push_back(v);
    std::sort(m_grid.begin(), m_grid.end());
    m_gridLabel = label;
    // Thinning counts from the value nearest zero so that ±v are kept or dropped together.
    m_gridAnchor = 0;
    for (size_t i = 0; i < m_grid.size(); ++i)
        if (std::fabs(m_grid[i]) < std::fabs(m_grid[m_gridAnchor])) m_gridAnchor = i;
    updateGridLines();
    updateLegend();
    refit();
}

void HistogramPlot::updateGridLines() {
    const QCPRange range = m_plot->xAxis->range();
    const auto first = std::lower_bound(m_grid.begin(), m_grid.end(), range.lower);
    const auto last = std::upper_bound(m_grid.begin(), m_grid.end(), range.upper);
    const auto inView = static_cast<int>(last - first);
    const int previousStride = m_gridStride;
    m_gridStride = inView > kMaxGridLines ? (inView + kMaxGridLines - 1) / kMaxGridLines : 1;
    QVector<double> keys, heights;
    for (auto it = first; it != last; ++it) {
        const auto offset = (it - m_grid.begin()) - static_cast<std::ptrdiff_t>(m_gridAnchor);
        if (((offset % m_gridStride) + m_gridStride) % m_gridStride != 0) continue;
        keys.push_back(*it);
        heights.push_back(1.0);
    }
    m_gridGraph->setData(keys, heights, true);
    if (m_gridStride != previousStride) updateLegend();  // its entry says "every k-th"
}

int HistogramPlot::drawnGridLineCount() const { return m_gridGraph->data()->size(); }

void HistogramPlot::setClipThresholds(double negative, double positive) {
    m_clip[0] = std::isfinite(negative) ? negative : kNaN;
    m_clip[1] = std::isfinite(positive) ? positive : kNaN;
    updateClipItems();
    updateLegend();
    refit();
}

void HistogramPlot::clearClipThresholds() { setClipThresholds(kNaN, kNaN); }

void HistogramPlot::updateClipItems() {
    for (int side = 0; side < 2; ++side) {
        const double t = m_clip[side];
        const bool shown = !std::isnan(t);
        m_clipLines[side]->setVisible(shown);
        m_clipShades[side]->setVisible(shown);
        m_clipLabels[side]->setVisible(shown);
        if (!shown) continue;
        m_clipLines[side]->point1->setCoords(t, 0);
        m_clipLines[side]->point2->setCoords(t, 1);
        (side == 0 ? m_clipShades[side]->bottomRight : m_clipShades[side]->topLeft)->setCoords(t, side == 0 ? 1.0 : 0.0);
        m_clipLabels[side]->position->setCoords(t, 0.0);
        m_clipLabels[side]->setText(shortNumber(t));
    }
}

void HistogramPlot::setOutliers(const std::vector<double>& values) {
    m_outliers.clear();
    for (double v : values)
        if (std::isfinite(v)) m_outliers.push_back(v);
    std::sort(m_outliers.begin(), m_outliers.end());
    m_outlierGraph->setData(QVector<double>(m_outliers.begin(), m_outliers.end()),
                            QVector<double>(static_cast<int>(m_outliers.size()), 0.0), true);
    updateLegend();
    refit();
}

int HistogramPlot::drawnOutlierCount() const { return m_outlierGraph->data()->size(); }

void HistogramPlot::setLogCount(bool on) {
    if (on == m_logCount) return;
    m_logCount = on;
    QCPAxis* y = m_plot->yAxis;
    if (on) {
        y->setScaleType(QCPAxis::stLogarithmic);
        auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
        ticker->setLogBase(10);
        ticker->setSubTickCount(8);
        y->setTicker(ticker);
    } else {
        y->setScaleType(QCPAxis::stLinear);
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
    updateHistogramGraph(m_histogramGraph, m_histogram);
    updateHistogramGraph(m_overlayGraph, m_overlay);
    updateYRange();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    Q_EMIT logCountChanged(on);
}

void HistogramPlot::updateYRange() {
    double highest = 0;
    for (const Histogram* h : {&m_histogram, &m_overlay})
        for (double c : h->counts) highest = std::max(highest, cleanCount(c));
    if (m_logCount)
        m_plot->yAxis->setRange(kLogZeroCount, std::max(highest, 1.0) * 2.0);
    else
        m_plot->yAxis->setRange(0, highest > 0 ? highest * 1.08 : 1.0);
}

void HistogramPlot::setXRange(double lo, double hi) {
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) return;
    m_plot->xAxis->setRange(lo, hi);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HistogramPlot::resetView() {
    DataExtent extent;
    for (const Histogram* h : {&m_histogram, &m_overlay}) {
        if (!isValid(*h)) continue;
        extent.take(h->lo);
        extent.take(h->hi);
    }
    extent.take(m_clip[0]);
    extent.take(m_clip[1]);
    if (!m_outliers.empty()) {
        extent.take(m_outliers.front());
        extent.take(m_outliers.back());
    }
    if (extent.empty() && !m_grid.empty()) {
        extent.take(m_grid.front());
        extent.take(m_grid.back());
    }
    const auto [lower, upper] = extent.padded(0.03);
    m_fitting = true;
    m_plot->xAxis->setRange(lower, upper);
    m_fitting = false;
    m_followData = true;
    updateGridLines();
    updateYRange();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HistogramPlot::updateLegend() {
    QCPLegend* legend = m_plot->legend;
    auto show = [legend](QCPGraph* g, bool on) {
        if (on)
            g->addToLegend(legend);
        else
            g->removeFromLegend(legend);
    };
    // Remove all, then add in a fixed order so the legend never reshuffles.
    for (QCPGraph* g : {m_histogramGraph, m_overlayGraph, m_gridGraph, m_clipLegendGraph, m_outlierGraph}) show(g, false);

    m_histogramGraph->setName(m_histogram.label.isEmpty() ? tr("values") : m_histogram.label);
    show(m_histogramGraph, isValid(m_histogram));
    m_overlayGraph->setName(m_overlay.label.isEmpty() ? tr("overlay") : m_overlay.label);
    show(m_overlayGraph, isValid(m_overlay));

    QString gridName = m_gridLabel.isEmpty() ? tr("representable values") : m_gridLabel;
    if (m_gridStride > 1) gridName += tr(" (every %1 shown)").arg(ordinal(m_gridStride));
    m_gridGraph->setName(gridName);
    show(m_gridGraph, !m_grid.empty());

    const bool neg = !std::isnan(m_clip[0]), pos = !std::isnan(m_clip[1]);
    QString clipName;
    if (neg && pos && m_clip[0] == -m_clip[1])
        clipName = tr("clip \u00b1%1").arg(shortNumber(m_clip[1]));
    else if (neg && pos)
        clipName = tr("clip %1 / %2").arg(shortNumber(m_clip[0]), shortNumber(m_clip[1]));
    else if (neg || pos)
        clipName = tr("clip %1").arg(shortNumber(neg ? m_clip[0] : m_clip[1]));
    m_clipLegendGraph->setName(clipName);
    show(m_clipLegendGraph, neg || pos);

    m_outlierGraph->setName(tr("outliers (%1)").arg(m_outliers.size()));
    show(m_outlierGraph, !m_outliers.empty());
    legend->setVisible(legend->itemCount() > 0);
    arrangePlotHeader(m_plot, m_header, m_title, legend, 3);
}

void HistogramPlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    m_plot->xAxis->grid()->setVisible(false);  // the format grid is the vertical grid here

    QColor fill = m_style.primary;
    fill.setAlpha(m_style.dark ? 110 : 90);
    m_histogramGraph->setPen(QPen(m_style.primary, 1.2));
    m_histogramGraph->setBrush(fill);
    m_overlayGraph->setPen(QPen(m_style.secondary, 1.8));
    m_overlayGraph->setBrush(Qt::NoBrush);
    // Opaque and not antialiased: lines that share a pixel column do not darken each other.
    const double mix = m_style.dark ? 0.32 : 0.26;
    const QColor gridColour = QColor::fromRgbF(
        m_style.background.redF() + mix * (m_style.text.redF() - m_style.background.redF()),
        m_style.background.greenF() + mix * (m_style.text.greenF() - m_style.background.greenF()),
        m_style.background.blueF() + mix * (m_style.text.blueF() - m_style.background.blueF()));
    m_gridGraph->setPen(QPen(gridColour, 1.0));
    m_gridGraph->setAntialiased(false);
    m_outlierGraph->setScatterStyle(
        QCPScatterStyle(outlierMarkerPath(), QPen(m_style.warning, 1.0), QBrush(m_style.warning), 6));

    const QPen clipPen(m_style.warning, 1.5, Qt::DashLine);
    m_clipLegendGraph->setPen(clipPen);
    QColor shade = m_style.warning;
    shade.setAlpha(m_style.dark ? 30 : 24);
    QFont labelFont = m_style.font;
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.9);
    for (int side = 0; side < 2; ++side) {
        m_clipLines[side]->setPen(clipPen);
        m_clipShades[side]->setPen(Qt::NoPen);
        m_clipShades[side]->setBrush(shade);
        m_clipLabels[side]->setColor(m_style.warning);
        m_clipLabels[side]->setFont(labelFont);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HistogramPlot::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);  // the layout has already resized the plot
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, 3);
}

void HistogramPlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

QString HistogramPlot::csv() const {
    QString out = QStringLiteral("series,label,x,x_end,count\n");
    auto bins = [&out](const QString& series, const Histogram& h) {
        if (!isValid(h)) return;
        const double w = binWidth(h);
        for (size_t i = 0; i < h.counts.size(); ++i) {
            const double a = h.lo + static_cast<double>(i) * w;
            const double b = i + 1 == h.counts.size() ? h.hi : a + w;
            out += QStringLiteral("%1,%2,%3,%4,%5\n")
                       .arg(series, csvField(h.label), csvNumber(a), csvNumber(b), csvNumber(h.counts[i]));
        }
    };
    bins(QStringLiteral("histogram"), m_histogram);
    bins(QStringLiteral("overlay"), m_overlay);
    for (double v : m_grid) out += QStringLiteral("grid,%1,%2,,\n").arg(csvField(m_gridLabel), csvNumber(v));
    if (!std::isnan(m_clip[0])) out += QStringLiteral("clip,negative,%1,,\n").arg(csvNumber(m_clip[0]));
    if (!std::isnan(m_clip[1])) out += QStringLiteral("clip,positive,%1,,\n").arg(csvNumber(m_clip[1]));
    for (double v : m_outliers) out += QStringLiteral("outlier,,%1,,\n").arg(csvNumber(v));
    return out;
}

void HistogramPlot::showToolTip(QMouseEvent* event) {
    const std::optional<QPointF> hover = axisRectHoverPosition(m_plot, event);
    if (!hover) return;
    const QPointF pos = *hover;
    const double x = m_plot->xAxis->pixelToCoord(pos.x());
    QStringList lines;
    auto binLine = [x](const Histogram& h) -> QString {
        if (!isValid(h) || x < h.lo || x >= h.hi) return {};
        const double w = binWidth(h);
        const auto i = std::min(h.counts.size() - 1, static_cast<size_t>((x - h.lo) / w));
        const double a = h.lo + static_cast<double>(i) * w;
        const QString name = h.label.isEmpty() ? QString() : h.label + QStringLiteral(": ");
        return QStringLiteral("%1[%2, %3): %4")
            .arg(name, shortNumber(a), shortNumber(a + w), QString::number(h.counts[i], 'g', 10));
    };
    for (const Histogram* h : {&m_histogram, &m_overlay}) {
        const QString line = binLine(*h);
        if (!line.isEmpty()) lines << line;
    }
    // The nearest drawn grid line within a few pixels.
    const double tolerance = std::fabs(m_plot->xAxis->pixelToCoord(pos.x() + 4) - x);
    for (const QCPGraphData& d : *m_gridGraph->data())
        if (std::fabs(d.key - x) <= tolerance) {
            lines << tr("representable: %1").arg(QString::number(d.key, 'g', 7));
            break;
        }
    for (double v : m_outliers)
        if (std::fabs(v - x) <= 1.5 * tolerance) {
            lines << tr("outlier: %1").arg(QString::number(v, 'g', 7));
            break;
        }
    showPlotToolTip(m_plot, event, lines.join(QLatin1Char('\n')));
}

void HistogramPlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.addSeparator();
    addCheckableAction(&menu, tr("Logarithmic count"), m_logCount, this, [this](bool on) { setLogCount(on); });
    menu.addAction(tr("Reset zoom"), this, [this] { resetView(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

}  // namespace ql
