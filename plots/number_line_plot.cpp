// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/number_line_plot.h"

#include <QMenu>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plots/data_extent.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"

namespace ql {
namespace {

// Rows of the number line in plot coordinates: stems of the grid rise from 0 to 1, sample inputs
// float at 2 and are joined to their quantized value on the grid.
constexpr double kGridY = 1.0;
constexpr double kInputY = 2.0;

QString number(double v) { return QString::number(v, 'g', 7); }

}  // namespace

NumberLinePlot::NumberLinePlot(QWidget* parent) : QCustomPlot(parent) {
    setMouseTracking(true);
    setAntialiasedElements(QCP::aePlottables | QCP::aeItems | QCP::aeScatters);
    setMinimumHeight(120);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    yAxis->setVisible(false);
    yAxis->setRange(-0.15, 1.6);
    xAxis->grid()->setVisible(true);
    xAxis->setSubTicks(false);
    m_linearTicker = xAxis->ticker();
    m_linearTicker->setTickCount(9);
    m_symLogTicker = QSharedPointer<SymLogTicker>::create(m_transform);
    m_symLogTicker->setTickCount(14);

    // Title left and legend right in a header row above the axis, so neither covers data.
    PlotHeaderOptions header;
    header.titleStretch = 3.0;
    header.legendStretch = 1.0;
    header.legendIconSize = QSize(12, 10);
    m_title = insertPlotHeader(this, header).title;
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setWrap(0);
    axisRect()->setAutoMargins(QCP::msLeft | QCP::msRight | QCP::msBottom);
    axisRect()->setMargins(QMargins(12, 4, 12, 0));

    setContextMenuPolicy(Qt::CustomContextMenu);
    connect(this, &QWidget::customContextMenuRequested, this, &NumberLinePlot::showContextMenu);
    restyle();
}

void NumberLinePlot::setTitle(const QString& title) {
    m_title->setText(title);
    replot(rpQueuedReplot);
}

QString NumberLinePlot::title() const { return m_title->text(); }

void NumberLinePlot::setAxisLabel(const QString& label) {
    xAxis->setLabel(label);
    replot(rpQueuedReplot);
}

void NumberLinePlot::setGrid(const std::vector<double>& values, const std::vector<int>& categories,
                             const QStringList& categoryNames) {
    m_grid = values;
    m_categories = categories.size() == values.size() ? categories : std::vector<int>(values.size(), 0);
    m_categoryNames = categoryNames;
    m_selectedGrid = -1;
    rebuild();
}

void NumberLinePlot::setSamples(const std::vector<double>& inputs, const std::vector<double>& outputs,
                                const std::vector<bool>& flagged, const QString& flaggedName) {
    const size_t n = std::min(inputs.size(), outputs.size());
    m_inputs.assign(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n));
    m_outputs.assign(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(n));
    m_flagged = flagged.size() == n ? flagged : std::vector<bool>(n, false);
    m_flaggedName = flaggedName;
    m_selectedSample = -1;
    rebuild();
}

void NumberLinePlot::setMarkers(const QVector<QPair<double, QString>>& markers) {
    m_markers = markers;
    rebuild();
}

void NumberLinePlot::setScale(Scale scale) {
    if (scale == m_scale) return;
    m_scale = scale;
    rebuild();
    Q_EMIT scaleChanged(scale);
}

void NumberLinePlot::setSelectedGridIndex(int index) {
    m_selectedGrid = index >= 0 && index < static_cast<int>(m_grid.size()) ? index : -1;
    m_selectedSample = -1;
    updateSelection();
}

void NumberLinePlot::setSelectedSample(int index) {
    m_selectedSample = index >= 0 && index < static_cast<int>(m_inputs.size()) ? index : -1;
    m_selectedGrid = -1;
    updateSelection();
}

void NumberLinePlot::updateSelection() {
    // Only the ring moves: the user's zoom survives selecting a point.
    double x = std::numeric_limits<double>::quiet_NaN(), y = 0;
    if (m_selectedGrid >= 0) {
        x = toAxis(m_grid[static_cast<size_t>(m_selectedGrid)]);
        y = kGridY;
    } else if (m_selectedSample >= 0) {
        x = toAxis(m_inputs[static_cast<size_t>(m_selectedSample)]);
        y = kInputY;
    }
    if (std::isfinite(x))
        m_selectionGraph->setData({x}, {y});
    else
        m_selectionGraph->data()->clear();
    replot(rpQueuedReplot);
}

int NumberLinePlot::gridPointCount() const {
    int n = 0;
    for (const QCPGraph* g : m_gridGraphs) n += g->data()->size();
    return n;
}

int NumberLinePlot::samplePointCount() const {
    int n = 0;
    if (m_inputGraph) n += m_inputGraph->data()->size();
    if (m_flaggedGraph) n += m_flaggedGraph->data()->size();
    return n;
}

QString NumberLinePlot::toCsv() const {
    QString csv = QStringLiteral("series,index,value\n");
    for (size_t i = 0; i < m_grid.size(); ++i) {
        const int c = m_categories[i];
        const QString name = c >= 0 && c < m_categoryNames.size() ? m_categoryNames[c] : QStringLiteral("value");
        csv += QStringLiteral("grid:%1,%2,%3\n").arg(name).arg(i).arg(number(m_grid[i]));
    }
    for (size_t i = 0; i < m_inputs.size(); ++i)
        csv += QStringLiteral("input,%1,%2\n").arg(i).arg(number(m_inputs[i]));
    for (size_t i = 0; i < m_outputs.size(); ++i)
        csv += QStringLiteral("output,%1,%2\n").arg(i).arg(number(m_outputs[i]));
    return csv;
}

double NumberLinePlot::toAxis(double x) const {
    return m_scale == Scale::SymLog ? m_transform.forward(x) : x;
}

void NumberLinePlot::rebuild(bool resetRange) {
    clearGraphs();
    clearItems();
    m_gridGraphs.clear();
    m_inputGraph = m_flaggedGraph = m_outputGraph = m_selectionGraph = nullptr;

    // The symlog threshold is the smallest positive magnitude drawn, so the finest step of the
    // grid (subnormals included) still gets one unit of axis.
    double smallest = std::numeric_limits<double>::infinity();
    for (double v : m_grid)
        if (v != 0 && std::isfinite(v)) smallest = std::min(smallest, std::fabs(v));
    if (!std::isfinite(smallest))
        for (double v : m_inputs)
            if (v != 0 && std::isfinite(v)) smallest = std::min(smallest, std::fabs(v));
    m_transform = SymLogTransform(std::isfinite(smallest) ? smallest : 1.0);
    m_symLogTicker->setTransform(m_transform);
    xAxis->setTicker(m_scale == Scale::SymLog ? QSharedPointer<QCPAxisTicker>(m_symLogTicker) : m_linearTicker);

    const bool withSamples = !m_inputs.empty();
    const QColor categoryColours[] = {m_style.primary, m_style.secondary, m_style.output, m_style.input};
    const int categoryCount =
        std::max<int>(1, m_categories.empty() ? 1 : *std::max_element(m_categories.begin(), m_categories.end()) + 1);
    for (int c = 0; c < categoryCount; ++c) {
        QVector<double> keys, values;
        for (size_t i = 0; i < m_grid.size(); ++i) {
            if (m_categories[i] != c || !std::isfinite(m_grid[i])) continue;
            keys.push_back(toAxis(m_grid[i]));
            values.push_back(kGridY);
        }
        QCPGraph* g = addGraph();
        QColor colour = withSamples ? m_style.muted : categoryColours[c % 4];
        g->setLineStyle(QCPGraph::lsImpulse);
        g->setPen(QPen(colour, 1.4));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, withSamples ? 4 : 5));
        g->setData(keys, values, true);
        g->setName(c < m_categoryNames.size() ? m_categoryNames[c] : QString());
        g->setAdaptiveSampling(false);  // every value must stay visible
        if (g->name().isEmpty() || keys.isEmpty()) g->removeFromLegend();
        m_gridGraphs.push_back(g);
    }

    if (withSamples) {
        QVector<double> inKeys, inValues, flagKeys, flagValues, outKeys, outValues;
        for (size_t i = 0; i < m_inputs.size(); ++i) {
            const bool finite = std::isfinite(m_inputs[i]) && std::isfinite(m_outputs[i]);
            if (!finite) continue;  // NaN/Inf are reported in the table; they have no place on a line
            const double xi = toAxis(m_inputs[i]);
            const double xo = toAxis(m_outputs[i]);
            (m_flagged[i] ? flagKeys : inKeys).push_back(xi);
            (m_flagged[i] ? flagValues : inValues).push_back(kInputY);
            outKeys.push_back(xo);
            outValues.push_back(kGridY);
            auto* line = new QCPItemLine(this);
            line->start->setCoords(xi, kInputY);
            line->end->setCoords(xo, kGridY);
            QColor c = m_flagged[i] ? m_style.warning : m_style.input;
            c.setAlpha(120);
            line->setPen(QPen(c, 1.0));
            line->setSelectable(false);
        }
        m_outputGraph = addGraph();
        m_outputGraph->setName(tr("quantized"));
        m_outputGraph->setLineStyle(QCPGraph::lsNone);
        m_outputGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, m_style.output, m_style.output, 7));
        m_outputGraph->setData(outKeys, outValues);
        m_inputGraph = addGraph();
        m_inputGraph->setName(tr("input"));
        m_inputGraph->setLineStyle(QCPGraph::lsNone);
        m_inputGraph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDiamond, m_style.input, m_style.input, 8));
        m_inputGraph->setData(inKeys, inValues);
        m_flaggedGraph = addGraph();
        m_flaggedGraph->setName(m_flaggedName.isEmpty() ? tr("flagged") : m_flaggedName);
        m_flaggedGraph->setLineStyle(QCPGraph::lsNone);
        m_flaggedGraph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDiamond, m_style.warning, m_style.warning, 9));
        m_flaggedGraph->setData(flagKeys, flagValues);
        if (flagKeys.isEmpty()) m_flaggedGraph->removeFromLegend();
        for (QCPGraph* g : {m_outputGraph, m_inputGraph, m_flaggedGraph}) g->setAdaptiveSampling(false);
    }

    for (const auto& marker : m_markers) {
        const double x = toAxis(marker.first);
        auto* line = new QCPItemStraightLine(this);
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        line->setPen(QPen(m_style.axis, 1, Qt::DashLine));
        auto* label = new QCPItemText(this);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(x, 0.0);
        // Labels sit inside the line so the outermost markers never leave the axis rect.
        label->setPositionAlignment(Qt::AlignTop | (marker.first >= 0 ? Qt::AlignRight : Qt::AlignLeft));
        label->setPadding(QMargins(4, 1, 4, 1));
        label->setText(marker.second);
        label->setColor(m_style.text);
        QFont f = m_style.font;
        f.setPointSizeF(f.pointSizeF() * 0.9);
        label->setFont(f);
    }

    m_selectionGraph = addGraph();
    m_selectionGraph->removeFromLegend();
    m_selectionGraph->setLineStyle(QCPGraph::lsNone);
    m_selectionGraph->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(m_style.highlight, 2.5), Qt::NoBrush, 15));

    legend->setVisible(legend->itemCount() > 0);
    yAxis->setRange(-0.15, withSamples ? 2.6 : 1.6);
    if (resetRange)
        resetView();
    updateSelection();
}

void NumberLinePlot::resetView() {
    DataExtent extent;
    auto take = [&](double v) {
        if (std::isfinite(v)) extent.take(toAxis(v));
    };
    for (double v : m_grid) take(v);
    for (double v : m_inputs) take(v);
    for (double v : m_outputs) take(v);
    for (const auto& m : m_markers) take(m.first);
    const auto [lower, upper] = extent.padded(0.04);
    xAxis->setRange(lower, upper);
    replot(rpQueuedReplot);
}

void NumberLinePlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(this, m_style, m_title);
    rebuild(false);
}

void NumberLinePlot::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

QPointF NumberLinePlot::gridPointPosition(int index) const {
    if (index < 0 || index >= static_cast<int>(m_grid.size())) return {};
    return {xAxis->coordToPixel(toAxis(m_grid[static_cast<size_t>(index)])), yAxis->coordToPixel(kGridY)};
}

int NumberLinePlot::gridIndexAt(const QPointF& pos, double radiusPx) const {
    // Anywhere along a stem counts: stems are thin and dense near zero.
    const double top = yAxis->coordToPixel(kGridY) - radiusPx;
    const double bottom = yAxis->coordToPixel(0.0) + radiusPx;
    if (pos.y() < top || pos.y() > bottom) return -1;
    int best = -1;
    double bestDistance = radiusPx;
    for (size_t i = 0; i < m_grid.size(); ++i) {
        const double d = std::fabs(xAxis->coordToPixel(toAxis(m_grid[i])) - pos.x());
        if (d <= bestDistance) {
            bestDistance = d;
            best = static_cast<int>(i);
        }
    }
    return best;
}

int NumberLinePlot::sampleIndexAt(const QPointF& pos, double radiusPx) const {
    int best = -1;
    double bestDistance = radiusPx;
    const double y = yAxis->coordToPixel(kInputY);
    for (size_t i = 0; i < m_inputs.size(); ++i) {
        if (!std::isfinite(m_inputs[i])) continue;
        const double d = std::hypot(xAxis->coordToPixel(toAxis(m_inputs[i])) - pos.x(), y - pos.y());
        if (d <= bestDistance) {
            bestDistance = d;
            best = static_cast<int>(i);
        }
    }
    return best;
}

void NumberLinePlot::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton) return;
    const int sample = sampleIndexAt(event->position());
    const int grid = sample < 0 ? gridIndexAt(event->position()) : -1;
    if (sample == m_hoverSample && grid == m_hoverGrid) return;
    m_hoverSample = sample;
    m_hoverGrid = grid;
    QString text;
    if (sample >= 0) {
        text = m_sampleToolTip ? m_sampleToolTip(sample)
                               : tr("input %1 → %2").arg(number(m_inputs[static_cast<size_t>(sample)]),
                                                         number(m_outputs[static_cast<size_t>(sample)]));
    } else if (grid >= 0) {
        text = m_gridToolTip ? m_gridToolTip(grid) : number(m_grid[static_cast<size_t>(grid)]);
    }
    showPlotToolTip(this, event, text);
    setCursor(sample >= 0 || grid >= 0 ? Qt::PointingHandCursor : Qt::ArrowCursor);
}

void NumberLinePlot::mousePressEvent(QMouseEvent* event) {
    m_pressPos = event->position().toPoint();
    QCustomPlot::mousePressEvent(event);
}

void NumberLinePlot::mouseReleaseEvent(QMouseEvent* event) {
    QCustomPlot::mouseReleaseEvent(event);
    if (event->button() != Qt::LeftButton) return;
    // A click, not the end of a drag.
    if ((event->position().toPoint() - m_pressPos).manhattanLength() > 3) return;
    const int sample = sampleIndexAt(event->position());
    if (sample >= 0) {
        Q_EMIT sampleClicked(sample);
        return;
    }
    const int grid = gridIndexAt(event->position());
    if (grid >= 0) Q_EMIT gridPointClicked(grid);
}

void NumberLinePlot::mouseDoubleClickEvent(QMouseEvent* event) {
    QCustomPlot::mouseDoubleClickEvent(event);
    resetView();
}

void NumberLinePlot::leaveEvent(QEvent* event) {
    QCustomPlot::leaveEvent(event);
    m_hoverGrid = m_hoverSample = -1;
}

void NumberLinePlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, this, m_exportName, [this] { return toCsv(); });
    menu.addSeparator();
    addCheckableAction(&menu, tr("Linear scale"), m_scale == Scale::Linear, this, [this](bool) { setScale(Scale::Linear); });
    addCheckableAction(&menu, tr("Symmetric log scale"), m_scale == Scale::SymLog, this,
                       [this](bool) { setScale(Scale::SymLog); });
    menu.addAction(tr("Reset zoom"), this, [this] { resetView(); });
    menu.exec(mapToGlobal(pos));
}

}  // namespace ql
