// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/bar_chart.h"

#include <QMenu>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/legend_layout.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/plot_tool_tip.h"
#include "plots/series_palette.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Share of a category's width covered by its bar(s).
constexpr double kCategoryFill = 0.78;
// Longest category label in pixels before it is elided (full text on hover): rotated labels
// under the bars get kMaxRotatedLabelPx, labels beside horizontal bars a share of the width.
constexpr int kMaxRotatedLabelPx = 150;
constexpr int kMinSideLabelPx = 150;
constexpr int kMaxSideLabelPx = 320;
constexpr double kSideLabelShare = 0.35;

// Module paths ("model.layers.12.mlp.down_proj") differ at the end, so they lose their start;
// other labels lose their end.
Qt::TextElideMode elideModeFor(const QString& label) {
    return label.contains(QLatin1Char('.')) || label.contains(QLatin1Char('/')) ? Qt::ElideLeft : Qt::ElideRight;
}

}  // namespace

BarChart::BarChart(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("barCustomPlot"));
    m_plot->setMinimumSize(200, 140);
    m_plot->setMouseTracking(true);
    m_plot->setAutoAddPlottableToLegend(false);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setAntialiasedElements(QCP::aeItems);
    layout->addWidget(m_plot);

    // Header row: title left, legend right, so neither covers a bar.
    PlotHeaderOptions header;
    header.titleSideMargin = 10;
    header.titleStretch = 2.0;
    header.legendStretch = 1.0;
    m_title = insertPlotHeader(m_plot, header).title;
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(4);

    m_categoryTicker = QSharedPointer<QCPAxisTickerText>::create();
    m_highlightLabel = tr("highlighted");

    connect(m_plot, &QCustomPlot::beforeReplot, this, &BarChart::updateCategoryTicks);
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] {
        // The legend shares the header row with the title.
        const QCPLayoutElement* titleElement = m_title;  // the size hint is public on the base
        const int title = m_title->text().isEmpty() ? 0 : titleElement->minimumOuterSizeHint().width();
        fitLegendColumns(m_plot->legend, m_plot->width() - title);
    });
    connect(m_plot, &QCustomPlot::mousePress, this, &BarChart::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &BarChart::onMouseRelease);
    connect(m_plot, &QCustomPlot::mouseMove, this, &BarChart::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetZoom(); });
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &BarChart::showContextMenu);
    restyle();
}

QCPAxis* BarChart::keyAxis() const { return m_horizontal ? m_plot->yAxis : m_plot->xAxis; }
QCPAxis* BarChart::valueAxis() const { return m_horizontal ? m_plot->xAxis : m_plot->yAxis; }

int BarChart::categoryCount() const {
    return m_mode == Mode::Bars ? static_cast<int>(m_bars.size()) : static_cast<int>(m_categories.size());
}

double BarChart::barWidth() const {
    if (m_mode == Mode::Bars) return kCategoryFill;
    return kCategoryFill / std::max<int>(1, static_cast<int>(m_groups.size()));
}

double BarChart::groupOffset(int group) const {
    if (m_mode == Mode::Bars) return 0;
    const int n = std::max<int>(1, static_cast<int>(m_groups.size()));
    return (group - (n - 1) / 2.0) * barWidth();
}

double BarChart::valueAt(int index, int group) const {
    if (m_mode == Mode::Bars) return index >= 0 && index < m_bars.size() ? m_bars[index].value : kNaN;
    if (group < 0 || group >= m_values.size() || index < 0 || index >= m_values[group].size()) return kNaN;
    return m_values[group][index];
}

QString BarChart::fullLabel(int index) const {
    if (m_mode == Mode::Bars) return index >= 0 && index < m_bars.size() ? m_bars[index].label : QString();
    return index >= 0 && index < m_categories.size() ? m_categories[index] : QString();
}

void BarChart::setBars(const QVector<Bar>& bars, bool sortDescending) {
    m_mode = Mode::Bars;
    m_bars = bars;
    if (sortDescending) {
        std::stable_sort(m_bars.begin(), m_bars.end(), [](const Bar& a, const Bar& b) {
            if (std::isnan(a.value)) return false;
            if (std::isnan(b.value)) return true;
            return a.value > b.value;
        });
    }
    m_categories.clear();
    m_groups.clear();
    m_values.clear();
    rebuild();
    resetZoom();
}

void BarChart::setGroupedBars(const QStringList& categories, const QStringList& groups,
                              const QVector<QVector<double>>& values) {
    m_mode = Mode::Grouped;
    m_bars.clear();
    m_categories = categories;
    m_groups = groups;
    m_values = values;
    m_values.resize(groups.size());
    for (auto& row : m_values) row.resize(categories.size(), kNaN);
    m_lows.clear();
    m_highs.clear();
    rebuild();
    resetZoom();
}

void BarChart::setGroupedIntervals(const QVector<QVector<double>>& lows, const QVector<QVector<double>>& highs) {
    m_lows = lows;
    m_highs = highs;
    for (QVector<QVector<double>>* m : {&m_lows, &m_highs}) {
        m->resize(m_groups.size());
        for (auto& row : *m) row.resize(m_categories.size(), kNaN);
    }
    rebuild();
    resetZoom();
}

QVector<QVector<QPair<double, double>>> BarChart::groupedIntervals() const {
    QVector<QVector<QPair<double, double>>> out(m_groups.size());
    for (int g = 0; g < m_groups.size(); ++g)
        for (int c = 0; c < m_categories.size(); ++c)
            out[g].push_back(m_lows.isEmpty() ? qMakePair(kNaN, kNaN) : qMakePair(m_lows[g][c], m_highs[g][c]));
    return out;
}

void BarChart::setHigherIsBetter(bool higherIsBetter) {
    if (higherIsBetter == m_higherIsBetter) return;
    m_higherIsBetter = higherIsBetter;
    rebuild();
}

void BarChart::setValueLabel(const QString& label) {
    m_valueLabel = label;
    valueAxis()->setLabel(label);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BarChart::setHighlightLabel(const QString& label) {
    m_highlightLabel = label;
    rebuild();
}

void BarChart::setLabelTop(int n) {
    m_labelTop = std::max(0, n);
    rebuild();
    resetZoom();
}

void BarChart::setHorizontal(bool horizontal) {
    if (horizontal == m_horizontal) return;
    m_horizontal = horizontal;
    rebuild();
    resetZoom();
}

void BarChart::setTitle(const QString& title) {
    m_title->setText(title);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int BarChart::bestGroup(int category) const {
    return m_mode == Mode::Grouped && category >= 0 && category < m_best.size() ? m_best[category] : -1;
}

void BarChart::computeBest() {
    m_best.fill(-1, m_categories.size());
    for (int c = 0; c < m_categories.size(); ++c) {
        // A tie at the top has no best: every run at 0 % (a category nobody answers) must not
        // star the first one.
        double best = kNaN;
        bool tied = false;
        for (int g = 0; g < m_groups.size(); ++g) {
            const double v = m_values[g][c];
            if (!std::isfinite(v)) continue;
            if (std::isnan(best) || (m_higherIsBetter ? v > best : v < best)) {
                best = v;
                m_best[c] = g;
                tied = false;
            } else if (v == best) {
                tied = true;
            }
        }
        if (tied) m_best[c] = -1;
    }
}

void BarChart::rebuild() {
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_topLabels.clear();
    QCPAxis* key = keyAxis();
    QCPAxis* value = valueAxis();

    // Axis roles: the key axis lists categories and has no grid; the value axis gets the grid.
    key->setTicker(m_categoryTicker);
    key->setSubTicks(false);
    key->setTickLength(0, 3);
    key->grid()->setVisible(false);
    key->setLabel(QString());
    key->setRangeReversed(m_horizontal);  // first bar on top when categories run downwards
    value->setTicker(QSharedPointer<QCPAxisTicker>::create());
    value->setSubTicks(true);
    value->setTickLength(0, 5);
    value->grid()->setVisible(true);
    value->setLabel(m_valueLabel);
    value->setRangeReversed(false);
    value->setNumberFormat(QStringLiteral("gb"));
    value->setTickLabelRotation(0);
    m_plot->axisRect()->setRangeDrag(m_horizontal ? Qt::Vertical : Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(m_horizontal ? Qt::Vertical : Qt::Horizontal);

    QFont markFont = m_style.font;
    markFont.setPointSizeF(markFont.pointSizeF() * 0.9);
    auto addNanMark = [&](double k) {
        auto* mark = new QCPItemText(m_plot);
        mark->setClipToAxisRect(true);
        // Item positions are (x, y) plot coordinates whichever axis holds the categories.
        mark->position->setCoords(m_horizontal ? 0.0 : k, m_horizontal ? k : 0.0);
        mark->setPositionAlignment(m_horizontal ? (Qt::AlignLeft | Qt::AlignVCenter) : (Qt::AlignBottom | Qt::AlignHCenter));
        mark->setText(QStringLiteral("nan"));
        mark->setColor(m_style.warning);
        mark->setFont(markFont);
        mark->setSelectable(false);
    };

    bool anyHighlight = false;
    if (m_mode == Mode::Bars) {
        auto* normal = new QCPBars(key, value);
        auto* accent = new QCPBars(key, value);
        QVector<double> nk, nv, ak, av;
        for (int i = 0; i < m_bars.size(); ++i) {
            const double v = m_bars[i].value;
            if (std::isnan(v)) {
                addNanMark(i);
                continue;
            }
            (m_bars[i].highlighted ? ak : nk).push_back(i);
            (m_bars[i].highlighted ? av : nv).push_back(v);
            anyHighlight |= m_bars[i].highlighted;
        }
        normal->setData(nk, nv, true);
        accent->setData(ak, av, true);
        for (QCPBars* b : {normal, accent}) {
            b->setWidth(barWidth());
            b->setWidthType(QCPBars::wtPlotCoords);
            b->setSelectable(QCP::stNone);
            b->setAntialiased(false);
        }
        normal->setName(m_valueLabel.isEmpty() ? tr("value") : m_valueLabel);
        normal->setBrush(m_style.primary);
        accent->setName(m_highlightLabel);
        accent->setBrush(m_style.highlight);
        // An outline in the fill colour: with thousands of channels a bar is narrower than a
        // pixel and its fill alone may cover none, hiding exactly the outliers.
        normal->setPen(QPen(m_style.primary, 1));
        accent->setPen(QPen(m_style.highlight, 1));
        if (anyHighlight) accent->addToLegend();

        // Names of the n largest bars above them, largest first (collisions are resolved at
        // replot time in favour of the larger bar).
        if (m_labelTop > 0) {
            QVector<int> order(m_bars.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [this](int a, int b) {
                const double va = m_bars[a].value, vb = m_bars[b].value;
                if (std::isnan(va)) return false;
                if (std::isnan(vb)) return true;
                return va > vb;
            });
            for (int r = 0; r < std::min<int>(m_labelTop, order.size()); ++r) {
                const int i = order[r];
                const double v = m_bars[i].value;
                if (!std::isfinite(v)) break;
                auto* label = new QCPItemText(m_plot);
                label->setSelectable(false);
                label->setClipToAxisRect(false);
                label->position->setCoords(m_horizontal ? v : i, m_horizontal ? i : v);
                const bool negative = v < 0;
                if (m_horizontal)
                    label->setPositionAlignment((negative ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
                else
                    label->setPositionAlignment((negative ? Qt::AlignTop : Qt::AlignBottom) | Qt::AlignHCenter);
                label->setPadding(QMargins(3, 1, 3, 1));
                label->setText(m_bars[i].label);
                label->setColor(m_style.text);
                label->setFont(markFont);
                m_topLabels.push_back(label);
            }
        }
    } else {
        computeBest();
        for (int g = 0; g < m_groups.size(); ++g) {
            const QColor colour = seriesColor(m_style, g);
            auto* bars = new QCPBars(key, value);
            auto* best = new QCPBars(key, value);
            QVector<double> k, v, bk, bv;
            for (int c = 0; c < m_categories.size(); ++c) {
                const double x = m_values[g][c];
                if (!std::isfinite(x)) continue;
                (m_best[c] == g ? bk : k).push_back(c + groupOffset(g));
                (m_best[c] == g ? bv : v).push_back(x);
            }
            bars->setData(k, v, true);
            best->setData(bk, bv, true);
            bars->setName(m_groups[g]);
            bars->setBrush(colour);
            bars->setPen(QPen(colour.darker(115), 1));
            best->setBrush(colour);
            best->setPen(QPen(m_style.highlight, 2.5));
            for (QCPBars* b : {bars, best}) {
                b->setWidth(barWidth() * 0.92);
                b->setWidthType(QCPBars::wtPlotCoords);
                b->setSelectable(QCP::stNone);
                b->setAntialiased(false);
            }
            bars->addToLegend();
            anyHighlight |= !bk.isEmpty();
            if (!m_lows.isEmpty()) {
                // Whiskers on an invisible carrier graph at the bars' positions.
                auto* carrier = new QCPGraph(key, value);
                carrier->setLineStyle(QCPGraph::lsNone);
                carrier->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssNone));
                carrier->setSelectable(QCP::stNone);
                carrier->removeFromLegend();
                auto* whiskers = new QCPErrorBars(key, value);
                whiskers->removeFromLegend();
                whiskers->setSelectable(QCP::stNone);
                whiskers->setErrorType(QCPErrorBars::etValueError);
                whiskers->setPen(QPen(m_style.text, 1.2));
                whiskers->setWhiskerWidth(std::max(3.0, 6.0 / std::max(1, static_cast<int>(m_groups.size())) * 2));
                QVector<double> wk, wv;
                QVector<double> minus, plus;
                for (int c = 0; c < m_categories.size(); ++c) {
                    const double x = m_values[g][c], lo = m_lows[g][c], hi = m_highs[g][c];
                    if (!std::isfinite(x) || !std::isfinite(lo) || !std::isfinite(hi)) continue;
                    wk.push_back(c + groupOffset(g));
                    wv.push_back(x);
                    minus.push_back(std::max(0.0, x - lo));
                    plus.push_back(std::max(0.0, hi - x));
                }
                carrier->setData(wk, wv, true);
                whiskers->setDataPlottable(carrier);
                whiskers->setData(minus, plus);
            }
            for (int c = 0; c < m_categories.size(); ++c) {
                if (m_best[c] != g) continue;
                // A star on the best bar: the outline alone is easy to miss on thin bars. Above
                // its whisker when it has one.
                double x = m_values[g][c];
                if (!m_lows.isEmpty() && std::isfinite(m_highs[g][c]) && std::isfinite(m_lows[g][c]))
                    x = x < 0 ? std::min(x, m_lows[g][c]) : std::max(x, m_highs[g][c]);
                auto* star = new QCPItemText(m_plot);
                star->setSelectable(false);
                star->setClipToAxisRect(false);
                const double k0 = c + groupOffset(g);
                star->position->setCoords(m_horizontal ? x : k0, m_horizontal ? k0 : x);
                if (m_horizontal)
                    star->setPositionAlignment((x < 0 ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
                else
                    star->setPositionAlignment((x < 0 ? Qt::AlignTop : Qt::AlignBottom) | Qt::AlignHCenter);
                star->setText(QStringLiteral("★"));
                star->setColor(m_style.highlight);
                star->setFont(m_style.font);
                star->setPadding(QMargins(2, 0, 2, 0));
            }
        }
        // A legend-only entry explaining the outline.
        auto* legendBest = new QCPBars(key, value);
        legendBest->setName(m_highlightLabel == tr("highlighted")
                                ? (m_higherIsBetter ? tr("★ best (highest)") : tr("★ best (lowest)"))
                                : m_highlightLabel);
        legendBest->setBrush(Qt::NoBrush);
        legendBest->setPen(QPen(m_style.highlight, 2.5));
        legendBest->setSelectable(QCP::stNone);
        if (anyHighlight) legendBest->addToLegend();
    }
    m_plot->legend->setVisible(m_plot->legend->itemCount() > 0);

    m_elidedFor = -1;  // labels changed: elide again at the next replot
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BarChart::resetZoom() {
    const int n = categoryCount();
    keyAxis()->setRange(-0.6, std::max(0, n - 1) + 0.6);
    double lo = 0, hi = 0;
    for (int i = 0; i < n; ++i) {
        const int groups = m_mode == Mode::Bars ? 1 : static_cast<int>(m_groups.size());
        for (int g = 0; g < groups; ++g) {
            const double v = valueAt(i, g);
            if (!std::isfinite(v)) continue;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            if (m_mode == Mode::Grouped && !m_lows.isEmpty()) {
                if (std::isfinite(m_lows[g][i])) lo = std::min(lo, m_lows[g][i]);
                if (std::isfinite(m_highs[g][i])) hi = std::max(hi, m_highs[g][i]);
            }
        }
    }
    if (hi - lo <= 0) hi = lo + 1;
    // Headroom for the top-n names / stars above the bars.
    const double room = (m_labelTop > 0 || m_mode == Mode::Grouped) ? (m_horizontal ? 0.22 : 0.12) : 0.04;
    const double span = hi - lo;
    valueAxis()->setRange(lo < 0 ? lo - room * span : lo, hi > 0 ? hi + room * span : hi);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BarChart::updateCategoryTicks() {
    const int n = categoryCount();
    QCPAxis* key = keyAxis();
    QVector<double> ticks;
    m_shownLabels.clear();
    if (n == 0) {
        m_categoryTicker->clear();
        return;
    }
    const QFontMetrics fm(key->tickLabelFont());
    // Pixels per category at the current zoom; before the first layout the rect is empty, so
    // estimate it from the widget.
    double extent = m_horizontal ? m_plot->axisRect()->height() : m_plot->axisRect()->width();
    if (extent < 20) extent = (m_horizontal ? m_plot->height() - 60 : m_plot->width() - 80);
    const double perCategory = std::max(1e-3, extent / std::max(1e-9, key->range().size()));
    const int limit = m_horizontal ? std::clamp(static_cast<int>(kSideLabelShare * m_plot->width()), kMinSideLabelPx,
                                                kMaxSideLabelPx)
                                   : kMaxRotatedLabelPx;
    if (limit != m_elidedFor || m_elided.size() != n) {
        m_elided.clear();
        for (int i = 0; i < n; ++i) {
            const QString full = fullLabel(i);
            m_elided.push_back(fm.elidedText(full, elideModeFor(full), limit));
        }
        m_elidedFor = limit;
    }
    int widest = 0;
    for (const QString& s : m_elided) widest = std::max(widest, fm.horizontalAdvance(s));
    int step = 1;
    if (m_horizontal) {
        m_rotation = 0;
        step = static_cast<int>(std::ceil(fm.height() * 1.1 / perCategory));
    } else {
        // Side by side if every label fits, or if that shows at least a third as many labels as
        // rotating would (thousands of channels read better level); rotated labels need about
        // √2 × text height between neighbours, plus air.
        const int level = static_cast<int>(std::ceil((widest + 12) / perCategory));
        const int rotated = static_cast<int>(std::ceil(fm.height() * 2.0 / perCategory));
        if (level <= 1 || level <= 3 * rotated) {
            m_rotation = 0;
            step = level;
        } else {
            m_rotation = -45;
            step = rotated;
        }
    }
    step = std::max(1, step);
    for (int i = 0; i < n; i += step) {
        ticks.push_back(i);
        m_shownLabels.push_back(m_elided[i]);
    }
    m_categoryTicker->setTicks(ticks, m_shownLabels);
    key->setTickLabelRotation(m_horizontal ? 0 : m_rotation);

    // Top-n names: drop a name that would overlap a larger bar's name.
    QVector<QRectF> placed;
    for (QCPItemText* label : m_topLabels) {
        const QPointF p = label->position->pixelPosition();
        const QFontMetrics lfm(label->font());
        const double w = lfm.horizontalAdvance(label->text()) + 6, h = lfm.height() + 2;
        QRectF r;
        if (m_horizontal)
            r = QRectF(p.x(), p.y() - h / 2, w, h);
        else
            r = QRectF(p.x() - w / 2, p.y() - h, w, h);
        const bool clash = std::any_of(placed.begin(), placed.end(), [&](const QRectF& o) { return o.intersects(r); });
        label->setVisible(!clash);
        if (!clash) placed.push_back(r);
    }
}

QStringList BarChart::shownCategoryLabels() const { return m_shownLabels; }
double BarChart::categoryLabelRotation() const { return m_rotation; }

QPointF BarChart::barPosition(int index, int group) const {
    double v = valueAt(index, group);
    if (!std::isfinite(v)) v = 0;
    const double k = index + groupOffset(group);
    const double kp = keyAxis()->coordToPixel(k);
    const double vp = valueAxis()->coordToPixel(v / 2);
    return m_horizontal ? QPointF(vp, kp) : QPointF(kp, vp);
}

QColor BarChart::barColor(int index, int group) const {
    if (m_mode == Mode::Bars) {
        if (index < 0 || index >= m_bars.size()) return {};
        return m_bars[index].highlighted ? m_style.highlight : m_style.primary;
    }
    return seriesColor(m_style, group);
}

int BarChart::barIndexAt(const QPointF& pos, int* group) const {
    if (group) *group = -1;
    if (!m_plot->axisRect()->rect().contains(pos.toPoint())) return -1;
    const double k = keyAxis()->pixelToCoord(m_horizontal ? pos.y() : pos.x());
    const int index = static_cast<int>(std::lround(k));
    if (index < 0 || index >= categoryCount()) return -1;
    const double offset = k - index;
    if (std::fabs(offset) > kCategoryFill / 2) return -1;
    int g = 0;
    if (m_mode == Mode::Grouped) {
        g = static_cast<int>(std::floor((offset + kCategoryFill / 2) / barWidth()));
        g = std::clamp<int>(g, 0, std::max<int>(0, static_cast<int>(m_groups.size()) - 1));
        if (m_groups.isEmpty()) return -1;
    }
    if (group) *group = g;
    return index;
}

void BarChart::onMousePress(QMouseEvent* event) { m_pressPos = event->position().toPoint(); }

void BarChart::onMouseRelease(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    if ((event->position().toPoint() - m_pressPos).manhattanLength() > 3) return;  // end of a drag
    int group = -1;
    const int index = barIndexAt(event->position(), &group);
    if (index < 0) return;
    Q_EMIT barClicked(index);
    Q_EMIT barClicked(fullLabel(index));
    if (m_mode == Mode::Grouped) Q_EMIT groupedBarClicked(index, group);
}

void BarChart::onMouseMove(QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton) return;
    int group = -1;
    const int index = barIndexAt(event->position(), &group);
    if (index < 0) {
        showPlotToolTip(m_plot, event, QString());
        return;
    }
    const QString valueName = m_valueLabel.isEmpty() ? tr("value") : m_valueLabel;
    QString text;
    if (m_mode == Mode::Bars) {
        const Bar& bar = m_bars[index];
        text = QStringLiteral("%1\n%2: %3").arg(bar.label, valueName, shortestNumber(bar.value));
        if (bar.highlighted) text += QStringLiteral("\n") + m_highlightLabel;
        if (!bar.tooltip.isEmpty()) text += QStringLiteral("\n") + bar.tooltip;
    } else {
        text = QStringLiteral("%1 · %2\n%3: %4")
                   .arg(m_categories[index], m_groups[group], valueName, shortestNumber(valueAt(index, group)));
        if (bestGroup(index) == group) text += QStringLiteral("\n★ ") + tr("best");
    }
    showPlotToolTip(m_plot, event, text);
}

QString BarChart::csv() const {
    QString out;
    if (m_mode == Mode::Bars) {
        out = QStringLiteral("label,%1,highlighted\n").arg(csvField(m_valueLabel.isEmpty() ? QStringLiteral("value") : m_valueLabel));
        for (const Bar& bar : m_bars)
            out += QStringLiteral("%1,%2,%3\n").arg(csvField(bar.label), shortestNumber(bar.value), bar.highlighted ? QStringLiteral("1") : QStringLiteral("0"));
        return out;
    }
    QStringList header{QStringLiteral("category")};
    for (const QString& g : m_groups) {
        header.push_back(csvField(g));
        if (!m_lows.isEmpty()) header << csvField(g + QStringLiteral(" low")) << csvField(g + QStringLiteral(" high"));
    }
    out = header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (int c = 0; c < m_categories.size(); ++c) {
        QStringList row{csvField(m_categories[c])};
        for (int g = 0; g < m_groups.size(); ++g) {
            row.push_back(shortestNumber(m_values[g][c]));
            if (!m_lows.isEmpty()) row << shortestNumber(m_lows[g][c]) << shortestNumber(m_highs[g][c]);
        }
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

void BarChart::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    rebuild();
}

void BarChart::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

void BarChart::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.addSeparator();
    menu.addAction(tr("Reset zoom"), this, [this] { resetZoom(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

}  // namespace ql
