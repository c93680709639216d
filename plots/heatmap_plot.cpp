// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/heatmap_plot.h"

#include <QMenu>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Viridis (van der Walt & Smith, matplotlib `_cm_listed.py`) sampled at 11 points: perceptually
// uniform, readable by colour-blind viewers and in greyscale, and its dark-to-bright ramp reads
// as low-to-high without a legend.
QCPColorGradient viridis() {
    QCPColorGradient g;
    g.clearColorStops();
    const char* stops[] = {"#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
                           "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"};
    for (int i = 0; i < 11; ++i) g.setColorStopAt(i / 10.0, QColor(stops[i]));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(256);
    return g;
}

// The dotted prefix every name shares ("model.layers."), or empty. A prefix that would leave a
// name empty is shortened to the previous dot.
QString commonDottedPrefix(const QStringList& names) {
    if (names.size() < 2) return {};
    QString prefix = names.front();
    for (const QString& n : names) {
        int i = 0;
        while (i < prefix.size() && i < n.size() && prefix[i] == n[i]) ++i;
        prefix.truncate(i);
    }
    int cut = prefix.lastIndexOf(QLatin1Char('.'));
    while (cut >= 0) {
        bool leavesEveryNameNonEmpty = true;
        for (const QString& n : names) leavesEveryNameNonEmpty = leavesEveryNameNonEmpty && n.size() > cut + 1;
        if (leavesEveryNameNonEmpty) break;
        cut = prefix.lastIndexOf(QLatin1Char('.'), cut - 1);
    }
    return cut >= 0 ? prefix.left(cut + 1) : QString();
}

QColor textColourOn(const QColor& background) {
    const double luma = 0.2126 * background.red() + 0.7152 * background.green() + 0.0722 * background.blue();
    return luma > 140 ? QColor(0x14, 0x16, 0x1a) : QColor(0xff, 0xff, 0xff);
}

}  // namespace

HeatmapPlot::HeatmapPlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    layout->addWidget(m_plot);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
    m_plot->setAntialiasedElements(QCP::aeItems);

    m_title = insertPlotTitleRow(m_plot, 8);
    m_plot->legend->setVisible(false);

    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        axis->setSubTicks(false);
        axis->setTickLength(0, 0);
        axis->grid()->setVisible(false);
        axis->setTickLabelPadding(6);
    }
    m_plot->yAxis->setRangeReversed(true);  // row 0 at the top, as in a table

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->setRangeDrag(false);
    m_scale->setRangeZoom(false);
    m_map->setColorScale(m_scale);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, margins);

    // Selection: a dark outer and a light inner frame, visible on every colour of the gradient.
    m_frameOuter = new QCPItemRect(m_plot);
    m_frameInner = new QCPItemRect(m_plot);
    for (QCPItemRect* r : {m_frameOuter, m_frameInner}) {
        r->setBrush(Qt::NoBrush);
        r->setSelectable(false);
        r->setVisible(false);
        r->setLayer(QStringLiteral("overlay"));
        r->setClipToAxisRect(false);
    }
    m_frameOuter->setObjectName(QStringLiteral("selection-frame"));

    connect(m_plot, &QCustomPlot::afterLayout, this, &HeatmapPlot::updateLabels);
    connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapPlot::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &HeatmapPlot::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &HeatmapPlot::onMouseRelease);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &HeatmapPlot::showContextMenu);

    restyle();
}

void HeatmapPlot::setTitle(const QString& title) {
    m_title->setText(title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString HeatmapPlot::title() const { return m_title->text(); }

void HeatmapPlot::setData(const QStringList& rows, const QStringList& cols,
                          const std::vector<std::vector<double>>& values, const QString& valueLabel) {
    m_rows = rows;
    m_cols = cols;
    m_valueLabel = valueLabel;
    m_values.assign(static_cast<size_t>(rows.size()), std::vector<double>(static_cast<size_t>(cols.size()), kNaN));
    for (size_t r = 0; r < m_values.size() && r < values.size(); ++r)
        for (size_t c = 0; c < m_values[r].size() && c < values[r].size(); ++c)
            m_values[r][c] = std::isfinite(values[r][c]) ? values[r][c] : kNaN;
    m_rowPrefix = commonDottedPrefix(rows);
    m_selectedRow = m_selectedCol = -1;
    m_hovered = {-1, -1};
    rebuildCells();
}

double HeatmapPlot::value(int row, int col) const {
    if (row < 0 || row >= m_rows.size() || col < 0 || col >= m_cols.size()) return kNaN;
    return m_values[static_cast<size_t>(row)][static_cast<size_t>(col)];
}

void HeatmapPlot::setHigherIsBetter(bool higherIsBetter) {
    if (higherIsBetter == m_higherIsBetter && !m_neutral) return;
    m_higherIsBetter = higherIsBetter;
    m_neutral = false;
    updateGradient();
    rebuildCells();
}

void HeatmapPlot::setNeutralScale() {
    if (m_neutral) return;
    m_neutral = true;
    m_higherIsBetter = true;  // the gradient's bright end is the high end
    updateGradient();
    rebuildCells();
}

void HeatmapPlot::updateGradient() {
    QCPColorGradient g = viridis();
    if (!m_higherIsBetter) g = g.inverted();
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(m_style.dark ? QColor(0x2c, 0x31, 0x39) : QColor(0xe9, 0xec, 0xef));
    m_map->setGradient(g);
    QString label = m_valueLabel;
    if (!label.isEmpty()) {
        label += m_neutral ? tr(", brighter = higher") : m_higherIsBetter ? tr(", higher is better") : tr(", lower is better");
    }
    m_scale->axis()->setLabel(label);
}

QString HeatmapPlot::scaleLabel() const { return m_scale->axis()->label(); }

QString HeatmapPlot::formatValue(double v) const {
    if (std::isnan(v)) return QStringLiteral("\u2013");
    const QCPRange range = m_map->dataRange();
    const double reach = std::max(std::fabs(range.lower), std::fabs(range.upper));
    // dB and other values of tens: one decimal; small magnitudes: three significant digits.
    return reach >= 10 ? QString::number(v, 'f', 1) : QString::number(v, 'g', 3);
}

void HeatmapPlot::rebuildCells() {
    const int nRows = static_cast<int>(m_rows.size());
    const int nCols = static_cast<int>(m_cols.size());
    for (QCPItemText* t : m_cellLabels) m_plot->removeItem(t);
    m_cellLabels.clear();
    // Missing-cell hatching is a set of rect items named "missing".
    for (int i = m_plot->itemCount() - 1; i >= 0; --i)
        if (m_plot->item(i)->objectName() == QLatin1String("missing")) m_plot->removeItem(i);

    const bool any = nRows > 0 && nCols > 0;
    m_map->setVisible(any);
    m_scale->setVisible(any);
    if (any) {
        // Cell centres at integer coordinates. QCPColorMapData places its range on the first and
        // last cell centres; a single cell gets a range one unit wide instead, which it then
        // fills edge to edge.
        const QCPRange keys = nCols > 1 ? QCPRange(0, nCols - 1) : QCPRange(-0.5, 0.5);
        const QCPRange rows = nRows > 1 ? QCPRange(0, nRows - 1) : QCPRange(-0.5, 0.5);
        m_map->data()->setSize(nCols, nRows);
        m_map->data()->setRange(keys, rows);
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (int r = 0; r < nRows; ++r)
            for (int c = 0; c < nCols; ++c) {
                const double v = m_values[static_cast<size_t>(r)][static_cast<size_t>(c)];
                m_map->data()->setCell(c, r, v);
                if (!std::isnan(v)) {
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                }
            }
        if (!std::isfinite(lo)) {
            lo = 0;
            hi = 1;
        } else if (hi - lo <= 0) {
            lo -= 0.5;
            hi += 0.5;
        }
        m_map->setDataRange(QCPRange(lo, hi));
    } else {
        m_map->data()->clear();
    }

    QMap<double, QString> colTicks;
    for (int c = 0; c < nCols; ++c) colTicks.insert(c, m_cols[c]);
    static_cast<QCPAxisTickerText*>(m_plot->xAxis->ticker().data())->setTicks(colTicks);
    m_drawnRowLabels.clear();
    m_plot->xAxis->setRange(-0.5, std::max(nCols, 1) - 0.5);
    m_plot->yAxis->setRange(-0.5, std::max(nRows, 1) - 0.5);
    m_plot->yAxis->setLabel(m_rowPrefix.isEmpty() ? QString() : m_rowPrefix + QStringLiteral("\u2026"));
    updateGradient();

    if (any && nRows * nCols <= kMaxLabelledCells) {
        QFont labelFont = m_style.font;
        labelFont.setPointSizeF(labelFont.pointSizeF() * 0.9);
        for (int r = 0; r < nRows; ++r)
            for (int c = 0; c < nCols; ++c) {
                const double v = m_values[static_cast<size_t>(r)][static_cast<size_t>(c)];
                auto* text = new QCPItemText(m_plot);
                text->setSelectable(false);
                text->position->setCoords(c, r);
                text->setPositionAlignment(Qt::AlignCenter);
                text->setText(formatValue(v));
                text->setFont(labelFont);
                text->setColor(std::isnan(v) ? m_style.text : textColourOn(cellColour(r, c)));
                text->setVisible(false);  // updateLabels decides once the cell size is known
                m_cellLabels.push_back(text);
                if (std::isnan(v)) {
                    auto* hatch = new QCPItemRect(m_plot);
                    hatch->setObjectName(QStringLiteral("missing"));
                    hatch->setSelectable(false);
                    hatch->topLeft->setCoords(c - 0.5, r - 0.5);
                    hatch->bottomRight->setCoords(c + 0.5, r + 0.5);
                    hatch->setPen(Qt::NoPen);
                    hatch->setBrush(QBrush(m_style.muted, Qt::BDiagPattern));
                }
            }
    }
    updateSelectionFrame();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QColor HeatmapPlot::cellColour(int row, int col) const {
    const double v = value(row, col);
    QCPColorGradient g = m_map->gradient();
    if (std::isnan(v)) return g.nanColor();
    return QColor::fromRgba(g.color(v, m_map->dataRange(), false));
}

void HeatmapPlot::updateLabels() {
    // Runs after every layout, when the cell size in pixels is known. Changing tick labels here
    // changes the margins, so a changed label set asks for one more (queued) replot.
    const int nRows = static_cast<int>(m_rows.size());
    const int nCols = static_cast<int>(m_cols.size());
    const QFontMetrics fm(m_plot->yAxis->tickLabelFont());
    const double rowPx = std::fabs(m_plot->yAxis->coordToPixel(1) - m_plot->yAxis->coordToPixel(0));
    const double colPx = std::fabs(m_plot->xAxis->coordToPixel(1) - m_plot->xAxis->coordToPixel(0));
    bool changed = false;

    // Rows: prefix removed, elided in the middle, every k-th when rows are thinner than a line.
    const int maxRowWidth = std::clamp(static_cast<int>(0.3 * m_plot->width()), 90, 340);
    const int rowStride = rowPx > 0 ? std::max(1, static_cast<int>(std::ceil(fm.height() / rowPx))) : 1;
    QStringList rowLabels;
    QMap<double, QString> rowTicks;
    for (int r = 0; r < nRows; ++r) {
        const QString full = m_rows[r].mid(m_rowPrefix.size());
        rowLabels << fm.elidedText(full, Qt::ElideMiddle, maxRowWidth);
        if (r % rowStride == 0) rowTicks.insert(r, rowLabels.back());
    }
    auto* rowTicker = static_cast<QCPAxisTickerText*>(m_plot->yAxis->ticker().data());
    if (rowTicks != rowTicker->ticks()) {
        rowTicker->setTicks(rowTicks);
        changed = true;
    }
    m_drawnRowLabels = rowLabels;

    // Columns: upright when they fit, else turned by 45 degrees; every k-th when even that
    // crowds them.
    int widest = 0;
    for (const QString& c : m_cols) widest = std::max(widest, fm.horizontalAdvance(c));
    const bool turn = widest + 6 > colPx;
    const double rotation = turn ? -45.0 : 0.0;
    if (m_plot->xAxis->tickLabelRotation() != rotation) {
        m_plot->xAxis->setTickLabelRotation(rotation);
        changed = true;
    }
    const double footprint = turn ? fm.height() * 1.5 : widest + 6;
    const int colStride = colPx > 0 ? std::max(1, static_cast<int>(std::ceil(footprint / colPx))) : 1;
    QMap<double, QString> colTicks;
    for (int c = 0; c < nCols; c += colStride) colTicks.insert(c, fm.elidedText(m_cols[c], Qt::ElideMiddle, 180));
    auto* colTicker = static_cast<QCPAxisTickerText*>(m_plot->xAxis->ticker().data());
    if (colTicks != colTicker->ticks()) {
        colTicker->setTicks(colTicks);
        changed = true;
    }

    // Value labels: all or none, so the table reads evenly.
    if (!m_cellLabels.empty()) {
        const QFontMetrics cellFm(m_cellLabels.front()->font());
        int textWidth = 0;
        for (const QCPItemText* t : m_cellLabels) textWidth = std::max(textWidth, cellFm.horizontalAdvance(t->text()));
        const bool fits = colPx >= textWidth + 6 && rowPx >= cellFm.height() + 2;
        for (QCPItemText* t : m_cellLabels) t->setVisible(fits);
    }
    if (changed) m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int HeatmapPlot::visibleCellLabelCount() const {
    int n = 0;
    for (const QCPItemText* t : m_cellLabels) n += t->visible() ? 1 : 0;
    return n;
}

QString HeatmapPlot::displayedRowLabel(int row) const {
    return row >= 0 && row < m_drawnRowLabels.size() ? m_drawnRowLabels[row] : QString();
}

void HeatmapPlot::setSelectedCell(int row, int col) {
    const bool valid = row >= 0 && row < m_rows.size() && col >= 0 && col < m_cols.size();
    m_selectedRow = valid ? row : -1;
    m_selectedCol = valid ? col : -1;
    updateSelectionFrame();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::updateSelectionFrame() {
    const bool shown = m_selectedRow >= 0;
    for (QCPItemRect* r : {m_frameOuter, m_frameInner}) {
        r->setVisible(shown);
        r->topLeft->setCoords(m_selectedCol - 0.5, m_selectedRow - 0.5);
        r->bottomRight->setCoords(m_selectedCol + 0.5, m_selectedRow + 0.5);
    }
}

QPointF HeatmapPlot::cellCentre(int row, int col) const {
    return {m_plot->xAxis->coordToPixel(col), m_plot->yAxis->coordToPixel(row)};
}

QPair<int, int> HeatmapPlot::cellAt(const QPointF& pos) const {
    if (!m_plot->axisRect()->rect().contains(pos.toPoint())) return {-1, -1};
    const int col = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    const int row = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
    if (row < 0 || row >= m_rows.size() || col < 0 || col >= m_cols.size()) return {-1, -1};
    return {row, col};
}

void HeatmapPlot::onMouseMove(QMouseEvent* event) {
    const QPair<int, int> cell = cellAt(event->position());
    if (cell == m_hovered) return;
    m_hovered = cell;
    if (cell.first < 0) {
        showPlotToolTip(m_plot, event, QString());
        m_plot->setCursor(Qt::ArrowCursor);
        Q_EMIT cellHovered(-1, -1);
        return;
    }
    const double v = value(cell.first, cell.second);
    const QString valueText = std::isnan(v) ? tr("no value") : QString::number(v, 'g', 6);
    showPlotToolTip(m_plot, event,
                    QStringLiteral("%1\n%2\n%3: %4")
                        .arg(m_rows[cell.first], m_cols[cell.second],
                             m_valueLabel.isEmpty() ? tr("value") : m_valueLabel, valueText));
    m_plot->setCursor(Qt::PointingHandCursor);
    Q_EMIT cellHovered(cell.first, cell.second);
}

void HeatmapPlot::onMousePress(QMouseEvent* event) { m_pressPos = event->position().toPoint(); }

void HeatmapPlot::onMouseRelease(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    if ((event->position().toPoint() - m_pressPos).manhattanLength() > 3) return;  // a drag, not a click
    const QPair<int, int> cell = cellAt(event->position());
    if (cell.first >= 0) Q_EMIT cellClicked(cell.first, cell.second);
}

bool HeatmapPlot::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::Leave && m_hovered.first >= 0) {
        m_hovered = {-1, -1};
        Q_EMIT cellHovered(-1, -1);
    }
    return QWidget::eventFilter(watched, event);
}

void HeatmapPlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis, m_plot->xAxis2, m_plot->yAxis2}) axis->grid()->setVisible(false);
    applyAxisStyle(m_scale->axis(), m_style);
    m_frameOuter->setPen(QPen(QColor(0x10, 0x12, 0x16), 4));
    m_frameInner->setPen(QPen(QColor(0xff, 0xff, 0xff), 1.5));
    updateGradient();
    rebuildCells();  // label colours and hatching follow the theme
}

void HeatmapPlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if ((event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) && m_frameInner) restyle();
}

QString HeatmapPlot::csv() const {
    QString out;
    for (const QString& c : m_cols) out += QLatin1Char(',') + csvField(c);
    out += QLatin1Char('\n');
    for (int r = 0; r < m_rows.size(); ++r) {
        out += csvField(m_rows[r]);
        for (int c = 0; c < m_cols.size(); ++c) {
            const double v = m_values[static_cast<size_t>(r)][static_cast<size_t>(c)];
            out += QLatin1Char(',');
            if (!std::isnan(v)) out += csvNumber(v);
        }
        out += QLatin1Char('\n');
    }
    return out;
}

void HeatmapPlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

}  // namespace ql
