// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/scale_histogram_plot.h"

#include <QLabel>
#include <QMenu>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"

namespace ql {
namespace {

// "2⁻¹⁰", "2⁰", "2³": every tick of a log2 axis written as the power it is.
QString powerOfTwoLabel(int exponent) {
    static const char16_t digits[] = {u'\u2070', u'\u00b9', u'\u00b2', u'\u00b3', u'\u2074',
                                      u'\u2075', u'\u2076', u'\u2077', u'\u2078', u'\u2079'};
    QString label = QStringLiteral("2");
    if (exponent < 0) label += QChar(u'\u207b');
    for (QChar d : QString::number(std::abs(exponent))) label += QChar(digits[d.digitValue()]);
    return label;
}

// Ticks at whole binades (or multiples of them when zoomed out), labelled as powers of two; when
// one binade per tick, the seven sub-ticks mark the 1/8-binade bin edges.
class PowerOfTwoTicker : public QCPAxisTickerFixed {
public:
    PowerOfTwoTicker() {
        setTickStep(1.0);
        setScaleStrategy(ssMultiples);
        setTickCount(12);
    }

protected:
    QString getTickLabel(double tick, const QLocale&, QChar, int) override {
        return powerOfTwoLabel(static_cast<int>(std::lround(tick)));
    }
    int getSubTickCount(double tickStep) override {
        return tickStep <= 1.0 ? ScaleHistogramPlot::kBinsPerBinade - 1 : 0;
    }
};

QString blocks(int n) { return n == 1 ? QObject::tr("1 block") : QObject::tr("%1 blocks").arg(n); }

double binLog2(int bin) { return static_cast<double>(bin) / ScaleHistogramPlot::kBinsPerBinade; }

}  // namespace

int ScaleHistogramPlot::binIndex(double scale) {
    int exponent = 0;
    const double mantissa = std::frexp(scale, &exponent);  // scale = mantissa · 2^exponent, mantissa in [0.5, 1)
    // log2(scale) = (exponent − 1) + log2(2·mantissa) with 2·mantissa in [1, 2); log2(1) is 0
    // exactly, and rounding can at most push the fraction to 1.0, hence the clamp.
    const double fraction = std::log2(2.0 * mantissa);
    const int sub = std::min(kBinsPerBinade - 1, static_cast<int>(std::floor(fraction * kBinsPerBinade)));
    return (exponent - 1) * kBinsPerBinade + sub;
}

ScaleHistogramPlot::ScaleHistogramPlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_plot = new QCustomPlot(this);
    // Small docks must work: the header re-flows (arrangePlotHeader) instead of widening the plot.
    m_plot->setMinimumSize(200, 140);
    layout->addWidget(m_plot, 1);
    m_caption = new QLabel(this);
    m_caption->setWordWrap(true);
    m_caption->setTextFormat(Qt::PlainText);
    m_caption->setContentsMargins(8, 0, 8, 4);
    m_caption->setVisible(false);
    // One card with the plot: the plot's background, body text colour.
    m_caption->setBackgroundRole(QPalette::Base);
    m_caption->setForegroundRole(QPalette::Text);
    m_caption->setAutoFillBackground(true);
    layout->addWidget(m_caption);

    m_plot->setMouseTracking(true);
    m_plot->setAntialiasedElements(QCP::aeItems);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->xAxis->setLabel(tr("block scale (log\u2082 axis, 8 bins per binade)"));
    m_plot->xAxis->setTicker(QSharedPointer<PowerOfTwoTicker>::create());
    m_plot->yAxis->setLabel(tr("blocks (%)"));

    const PlotHeader header = insertPlotHeader(m_plot);
    m_header = header.grid;
    m_title = header.title;

    m_group = new QCPBarsGroup(m_plot);
    m_group->setSpacingType(QCPBarsGroup::stAbsolute);
    m_group->setSpacing(0);
    for (int s = 0; s < kSlotCount; ++s) {
        m_bars[s] = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        m_bars[s]->setWidthType(QCPBars::wtPlotCoords);
    }

    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
    connect(m_plot, &QCustomPlot::mouseMove, this, &ScaleHistogramPlot::showToolTip);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &ScaleHistogramPlot::showContextMenu);
    restyle();
}

void ScaleHistogramPlot::setTitle(const QString& title) {
    m_title->setText(title);
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, 1);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString ScaleHistogramPlot::title() const { return m_title->text(); }

void ScaleHistogramPlot::setScales(int slot, const std::vector<double>& scales, const QString& label,
                                   const QColor& colour) {
    if (slot < 0 || slot >= kSlotCount) return;
    Slot s;
    s.label = label;
    s.colour = colour;
    for (double v : scales) {
        if (!(std::isfinite(v) && v > 0)) {
            ++s.skipped;
            continue;
        }
        ++s.bins[binIndex(v)];
        ++s.drawable;
    }
    m_slots[static_cast<size_t>(slot)] = std::move(s);
    rebuild();
}

void ScaleHistogramPlot::clearScales(int slot) {
    if (slot < 0 || slot >= kSlotCount) return;
    m_slots[static_cast<size_t>(slot)] = Slot{};
    rebuild();
}

void ScaleHistogramPlot::setCaption(const QString& text) {
    m_caption->setText(text);
    m_caption->setVisible(!text.isEmpty());
}

QString ScaleHistogramPlot::caption() const { return m_caption->text(); }

int ScaleHistogramPlot::skippedCount(int slot) const {
    return slot >= 0 && slot < kSlotCount ? m_slots[static_cast<size_t>(slot)].skipped : 0;
}

QColor ScaleHistogramPlot::slotColour(int slot) const {
    const QColor& given = m_slots[static_cast<size_t>(slot)].colour;
    if (given.isValid()) return given;
    return slot == 0 ? m_style.primary : m_style.secondary;
}

void ScaleHistogramPlot::rebuild() {
    int shown = 0;
    for (const Slot& s : m_slots) shown += s.bins.empty() ? 0 : 1;
    // Side by side in one bin when both are shown; one bar fills most of the bin otherwise.
    const double width = 1.0 / kBinsPerBinade / (shown > 1 ? 2.0 : 1.0) * (shown > 1 ? 1.0 : 0.85);
    m_plot->legend->clearItems();
    for (int i = 0; i < kSlotCount; ++i) {
        const Slot& s = m_slots[static_cast<size_t>(i)];
        QCPBars* bars = m_bars[static_cast<size_t>(i)];
        QVector<double> keys, heights;
        for (const auto& [bin, count] : s.bins) {
            keys.push_back(binLog2(bin) + 0.5 / kBinsPerBinade);
            heights.push_back(100.0 * count / s.drawable);
        }
        bars->setData(keys, heights, true);
        bars->setWidth(width);
        bars->setBarsGroup(shown > 1 && !s.bins.empty() ? m_group : nullptr);
        bars->setVisible(!s.bins.empty());
        QString name = s.label.isEmpty() ? tr("scales %1").arg(i + 1) : s.label;
        name += QStringLiteral(" \u00b7 ") + blocks(s.drawable);
        if (s.skipped > 0) name += tr(", %1 zero/NaN not drawn").arg(s.skipped);
        bars->setName(name);
        if (!s.bins.empty() || s.skipped > 0) bars->addToLegend();
    }
    m_plot->legend->setVisible(m_plot->legend->itemCount() > 0);
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, 1);
    restyle();
    resetView();
}

std::vector<std::pair<double, double>> ScaleHistogramPlot::drawnBars(int slot) const {
    std::vector<std::pair<double, double>> out;
    if (slot < 0 || slot >= kSlotCount) return out;
    const QCPBars* bars = m_bars[static_cast<size_t>(slot)];
    if (!bars->visible()) return out;
    for (const QCPBarsData& d : *bars->data()) out.emplace_back(d.key - 0.5 / kBinsPerBinade, d.value);
    return out;
}

void ScaleHistogramPlot::resetView() {
    int lo = 0, hi = 0;
    bool any = false;
    double highest = 0;
    for (const Slot& s : m_slots) {
        if (s.bins.empty()) continue;
        lo = any ? std::min(lo, s.bins.begin()->first) : s.bins.begin()->first;
        hi = any ? std::max(hi, s.bins.rbegin()->first) : s.bins.rbegin()->first;
        any = true;
        for (const auto& [bin, count] : s.bins) highest = std::max(highest, 100.0 * count / s.drawable);
    }
    if (any)
        m_plot->xAxis->setRange(binLog2(lo) - 0.5, binLog2(hi + 1) + 0.5);
    else
        m_plot->xAxis->setRange(-4, 4);
    m_plot->yAxis->setRange(0, highest > 0 ? highest * 1.08 : 1.0);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ScaleHistogramPlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    m_plot->xAxis->grid()->setVisible(true);
    // Whole binades stand out; the sub-ticks already mark the bins.
    m_plot->xAxis->grid()->setPen(QPen(m_style.axis, 1, Qt::DotLine));
    for (int i = 0; i < kSlotCount; ++i) {
        const QColor colour = slotColour(i);
        QColor fill = colour;
        fill.setAlpha(210);
        m_bars[static_cast<size_t>(i)]->setPen(QPen(colour.darker(m_style.dark ? 100 : 120), 1));
        m_bars[static_cast<size_t>(i)]->setBrush(fill);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ScaleHistogramPlot::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);  // the layout has already resized the plot
    arrangePlotHeader(m_plot, m_header, m_title, m_plot->legend, 1);
}

void ScaleHistogramPlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

QString ScaleHistogramPlot::csv() const {
    QString out = QStringLiteral("slot,label,log2_lo,log2_hi,count,percent\n");
    for (int i = 0; i < kSlotCount; ++i) {
        const Slot& s = m_slots[static_cast<size_t>(i)];
        const QString label = csvField(s.label);
        for (const auto& [bin, count] : s.bins)
            out += QStringLiteral("%1,%2,%3,%4,%5,%6\n")
                       .arg(i)
                       .arg(label, csvNumber(binLog2(bin)), csvNumber(binLog2(bin + 1)), QString::number(count),
                            csvNumber(100.0 * count / s.drawable));
        if (s.skipped > 0) out += QStringLiteral("%1,%2,,,%3,\n").arg(i).arg(label).arg(s.skipped);
    }
    return out;
}

void ScaleHistogramPlot::showToolTip(QMouseEvent* event) {
    const std::optional<QPointF> hover = axisRectHoverPosition(m_plot, event);
    if (!hover) return;
    const double x = m_plot->xAxis->pixelToCoord(hover->x());
    const int bin = static_cast<int>(std::floor(x * kBinsPerBinade));
    QStringList lines;
    for (const Slot& s : m_slots) {
        const auto it = s.bins.find(bin);
        if (it == s.bins.end()) continue;
        lines << tr("%1: %2 (%3%)")
                     .arg(s.label, blocks(it->second), QString::number(100.0 * it->second / s.drawable, 'f', 1));
    }
    if (!lines.isEmpty())
        lines.prepend(tr("scale in [%1, %2)")
                          .arg(QString::number(std::exp2(binLog2(bin)), 'g', 4),
                               QString::number(std::exp2(binLog2(bin + 1)), 'g', 4)));
    showPlotToolTip(m_plot, event, lines.join(QLatin1Char('\n')));
}

void ScaleHistogramPlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.addSeparator();
    menu.addAction(tr("Reset zoom"), this, [this] { resetView(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

}  // namespace ql
