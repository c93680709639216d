// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/metric_plot.h"

#include <QCheckBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <qcustomplot.h>

#include "plots/csv_text.h"
#include "plots/flow_layout.h"
#include "plots/legend_layout.h"
#include "plots/plot_export.h"
#include "plots/plot_header.h"
#include "plots/series_palette.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Minimum spacing of coalesced replots: just above 1000/30 ms, so at most 30 per second.
constexpr int kMinReplotIntervalMs = 34;
// Curves with at most this many points (eval metrics) also get a dot per point.
constexpr size_t kDotsUpTo = 200;
// Curves with more points are stroked 1 px wide: Qt's raster engine draws pens of width ≤ 1
// with its fast cosmetic stroker, while a wider pen turns the adaptive-sampled zigzag of a noisy
// million-point curve into one huge self-overlapping path (measured offscreen, 1 M noisy points
// in a 900 px plot: ~110 ms per replot at 1.6 px, 7 ms at 1 px).
constexpr size_t kThinAbove = 2000;

// The x values are steps or block indices, whole numbers: ticks at 0.5 or 2.5 would name points
// that do not exist. QCustomPlot's readable step (1, 2, 2.5, 5 x 10^k) is rounded up to an integer.
class WholeNumberTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override {
        const double step = QCPAxisTicker::getTickStep(range);
        return step < 1 ? 1 : std::ceil(step);
    }
};

// How a curve is drawn for its length; a change of class restyles it.
int densityClass(size_t points) { return points <= kDotsUpTo ? 0 : points <= kThinAbove ? 1 : 2; }
// Height of the NaN/Inf markers in the axis rect (0 = bottom edge, 1 = top).
constexpr double kNonFiniteMarkY = 0.03;
constexpr int kSliderSteps = 1000;  // slider value / 1000 = EMA weight
constexpr double kMaxSmoothing = 0.999;

QString shortValue(double v) {
    if (!std::isfinite(v)) return shortestNumber(v);
    return QString::number(v, 'g', 6);
}

// Index of the step nearest to `x` in ascending `steps` (non-empty).
size_t nearestIndex(const std::vector<double>& steps, double x) {
    const auto it = std::lower_bound(steps.begin(), steps.end(), x);
    if (it == steps.begin()) return 0;
    if (it == steps.end()) return steps.size() - 1;
    const size_t hi = static_cast<size_t>(it - steps.begin());
    return (x - steps[hi - 1] <= steps[hi] - x) ? hi - 1 : hi;
}

Qt::PenStyle metricPenStyle(int metricIndex) {
    static const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine,
                                          Qt::DashDotDotLine};
    return styles[metricIndex % 5];
}

}  // namespace

struct MetricPlot::Series {
    int id = 0;
    QString run;
    QString metric;
    QColor explicitColor;
    QColor color;
    bool visible = true;
    std::vector<double> steps;
    std::vector<double> values;
    // Debiased EMA over the finite values (empty while smoothing is off).
    std::vector<double> smoothed;
    double emaLast = 0.0;
    long long emaCount = 0;
    int nonFinite = 0;
    int styledDensity = -1;  // densityClass the pens were chosen for
    QCPGraph* raw = nullptr;
    QCPGraph* smooth = nullptr;
    QCPGraph* marks = nullptr;  // NaN/Inf markers on the hidden yAxis2, range [0, 1]

    QString name() const { return run + QStringLiteral(" · ") + metric; }
    QString column() const { return run + QLatin1Char('/') + metric; }
};

MetricPlot::MetricPlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);

    // The controls in groups that wrap onto a second row when the plot is narrow (three plots
    // side by side at 1280 pixels), rather than clipping their labels.
    auto* toolbar = new FlowLayout(nullptr, 12, 2);
    toolbar->setContentsMargins(6, 2, 6, 0);
    m_logYBox = new QCheckBox(tr("Log y"), this);
    m_logYBox->setObjectName(QStringLiteral("logY"));
    m_logYBox->setToolTip(tr("Logarithmic y axis (values ≤ 0 are not drawn)"));
    toolbar->addWidget(m_logYBox);
    auto* smoothing = new QWidget(this);
    auto* smoothingRow = new QHBoxLayout(smoothing);
    smoothingRow->setContentsMargins(0, 0, 0, 0);
    auto* smoothingText = new QLabel(tr("Smoothing"), smoothing);
    smoothingRow->addWidget(smoothingText);
    m_smoothingSlider = new QSlider(Qt::Horizontal, smoothing);
    m_smoothingSlider->setObjectName(QStringLiteral("smoothing"));
    m_smoothingSlider->setRange(0, static_cast<int>(kMaxSmoothing * kSliderSteps));
    m_smoothingSlider->setFixedWidth(110);
    m_smoothingSlider->setToolTip(tr("Exponential moving average weight (TensorBoard-style, debiased)"));
    smoothingText->setBuddy(m_smoothingSlider);
    smoothingRow->addWidget(m_smoothingSlider);
    m_smoothingLabel = new QLabel(smoothing);
    m_smoothingLabel->setObjectName(QStringLiteral("smoothingValue"));
    // Room for "0.999" so the tool bar does not jump while dragging.
    m_smoothingLabel->setMinimumWidth(m_smoothingLabel->fontMetrics().horizontalAdvance(QStringLiteral("0.0000")));
    smoothingRow->addWidget(m_smoothingLabel);
    toolbar->addWidget(smoothing);
    // A check box rather than a checkable button: its state must read at a glance.
    auto* view = new QWidget(this);
    auto* viewRow = new QHBoxLayout(view);
    viewRow->setContentsMargins(0, 0, 0, 0);
    m_followButton = new QCheckBox(tr("Follow"), view);
    m_followButton->setObjectName(QStringLiteral("follow"));
    m_followButton->setChecked(true);
    m_followButton->setToolTip(tr("Keep the newest step in view"));
    viewRow->addWidget(m_followButton);
    m_resetButton = new QToolButton(view);
    m_resetButton->setObjectName(QStringLiteral("resetZoom"));
    m_resetButton->setText(tr("Reset zoom"));
    m_resetButton->setToolTip(tr("Show all data and follow the newest step (or double-click the plot)"));
    viewRow->addWidget(m_resetButton);
    toolbar->addWidget(view);
    m_toolbar = toolbar;
    layout->addLayout(toolbar);

    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("metricCustomPlot"));
    m_plot->setMinimumSize(240, 160);
    m_plot->setAutoAddPlottableToLegend(false);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeItems);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->xAxis->setNumberFormat(QStringLiteral("gb"));
    m_plot->xAxis->setTicker(QSharedPointer<WholeNumberTicker>::create());
    m_plot->yAxis->setNumberFormat(QStringLiteral("gb"));
    m_plot->yAxis2->setVisible(false);
    m_plot->yAxis2->setRange(0, 1);
    m_plot->xAxis->setRange(0, 1);
    m_plot->yAxis->setRange(0, 1);
    m_plot->setMouseTracking(true);
    layout->addWidget(m_plot, 1);

    // Legend in its own row above the axis rect: with several runs it would cover the curves.
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->plotLayout()->setRowSpacing(0);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(4);
    m_plot->legend->setIconSize(22, 10);
    m_plot->legend->setMargins(QMargins(6, 2, 6, 2));
    m_plot->legend->setSelectableParts(QCPLegend::spItems);  // needed for legendClick
    m_plot->legend->setVisible(false);

    m_crossLine = new QCPItemStraightLine(m_plot);
    m_crossLine->setLayer(QStringLiteral("overlay"));
    m_crossLine->setSelectable(false);
    m_crossLine->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_crossLine->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_crossLine->point1->setCoords(0, 0);
    m_crossLine->point2->setCoords(0, 1);
    m_crossLine->setVisible(false);
    m_crossText = new QCPItemText(m_plot);
    m_crossText->setLayer(QStringLiteral("overlay"));
    m_crossText->setSelectable(false);
    m_crossText->position->setType(QCPItemPosition::ptAbsolute);
    m_crossText->setTextAlignment(Qt::AlignLeft);
    m_crossText->setPadding(QMargins(6, 4, 6, 4));
    m_crossText->setVisible(false);
    // An empty chart says so, instead of a bare 0..1 frame (e.g. KL for an encoder's run, which
    // has no logits); hidden as soon as any curve has a point (flush()).
    m_emptyText = new QCPItemText(m_plot);
    m_emptyText->setObjectName(QStringLiteral("noDataText"));
    m_emptyText->setSelectable(false);
    // In the middle of the whole chart: with no curve the axis rect can be narrow.
    m_emptyText->setClipToAxisRect(false);
    m_emptyText->position->setType(QCPItemPosition::ptViewportRatio);
    m_emptyText->position->setCoords(0.5, 0.5);
    m_emptyText->setPositionAlignment(Qt::AlignCenter);
    m_emptyText->setText(tr("no data for the shown runs"));

    m_replotTimer.setSingleShot(true);
    connect(&m_replotTimer, &QTimer::timeout, this, &MetricPlot::flush);
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] {
        ++m_replotCount;
        m_sinceReplot.restart();
    });
    connect(m_plot, &QCustomPlot::beforeReplot, this, [this] { fitLegendColumns(m_plot->legend, m_plot->width()); });
    connect(m_plot, &QCustomPlot::mouseWheel, this, &MetricPlot::onWheel);
    connect(m_plot, &QCustomPlot::mousePress, this, &MetricPlot::onMousePress);
    connect(m_plot, &QCustomPlot::mouseMove, this, &MetricPlot::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, &MetricPlot::onDoubleClick);
    connect(m_plot, &QCustomPlot::legendClick, this, &MetricPlot::onLegendClick);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &MetricPlot::onUserRangeChange);
    connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &MetricPlot::onUserRangeChange);
    m_plot->installEventFilter(this);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, &MetricPlot::showContextMenu);

    connect(m_logYBox, &QCheckBox::toggled, this, &MetricPlot::setLogY);
    connect(m_smoothingSlider, &QSlider::valueChanged, this,
            [this](int v) { setSmoothing(static_cast<double>(v) / kSliderSteps); });
    connect(m_followButton, &QCheckBox::toggled, this, &MetricPlot::setFollow);
    connect(m_resetButton, &QToolButton::clicked, this, &MetricPlot::resetZoom);

    m_smoothingLabel->setText(QString::number(m_alpha, 'f', 3));
    restyle();
}

MetricPlot::~MetricPlot() = default;

bool MetricPlot::showsNoData() const { return m_emptyText->visible(); }

MetricPlot::Series* MetricPlot::find(int id) {
    for (auto& s : m_series)
        if (s->id == id) return s.get();
    return nullptr;
}

const MetricPlot::Series* MetricPlot::find(int id) const {
    for (const auto& s : m_series)
        if (s->id == id) return s.get();
    return nullptr;
}

int MetricPlot::addSeries(const QString& run, const QString& metric, const QColor& color) {
    auto s = std::make_unique<Series>();
    s->id = m_nextId++;
    s->run = run;
    s->metric = metric;
    s->explicitColor = color;
    if (!m_runs.contains(run)) m_runs.push_back(run);
    s->raw = m_plot->addGraph();
    s->smooth = m_plot->addGraph();
    s->marks = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    for (QCPGraph* g : {s->raw, s->smooth, s->marks}) {
        g->setAdaptiveSampling(true);
        g->setName(s->name());
    }
    s->marks->setLineStyle(QCPGraph::lsNone);
    s->smooth->setVisible(m_alpha > 0);
    const int id = s->id;
    m_series.push_back(std::move(s));
    restyleSeries();
    rebuildLegend();
    markDirty();
    return id;
}

double MetricPlot::shown(double v) const {
    if (!std::isfinite(v)) return kNaN;  // a gap; the marker graph shows where
    if (m_logY && v <= 0) return kNaN;
    return v;
}

void MetricPlot::extendSmoothed(Series& s) {
    if (m_alpha <= 0) {
        s.smoothed.clear();
        return;
    }
    // tensorboard/components/vz_line_chart2/line-chart.ts (resmoothDataset): non-finite values
    // pass through unsmoothed and leave the accumulator alone.
    const double a = m_alpha;
    s.smoothed.reserve(s.values.size());
    for (size_t i = s.smoothed.size(); i < s.values.size(); ++i) {
        const double v = s.values[i];
        if (!std::isfinite(v)) {
            s.smoothed.push_back(v);
            continue;
        }
        s.emaLast = s.emaLast * a + (1.0 - a) * v;
        ++s.emaCount;
        s.smoothed.push_back(s.emaLast / (1.0 - std::pow(a, static_cast<double>(s.emaCount))));
    }
}

void MetricPlot::fillGraphs(Series& s, size_t from) {
    if (from == 0) {
        s.raw->data()->clear();
        s.smooth->data()->clear();
        s.marks->data()->clear();
    }
    const size_t n = s.steps.size();
    if (from >= n) return;
    // One batch per container (sorted, appended at the end: QCPDataContainer::add copies, no
    // re-sort), never addData per point.
    QVector<QCPGraphData> raw(static_cast<qsizetype>(n - from));
    QVector<QCPGraphData> marks;
    for (size_t i = from; i < n; ++i) {
        raw[static_cast<qsizetype>(i - from)] = QCPGraphData(s.steps[i], shown(s.values[i]));
        if (!std::isfinite(s.values[i])) marks.push_back(QCPGraphData(s.steps[i], kNonFiniteMarkY));
    }
    s.raw->data()->add(raw, true);
    if (!marks.isEmpty()) s.marks->data()->add(marks, true);
    if (!s.smoothed.empty()) {
        QVector<QCPGraphData> smooth(static_cast<qsizetype>(n - from));
        for (size_t i = from; i < n; ++i)
            smooth[static_cast<qsizetype>(i - from)] = QCPGraphData(s.steps[i], shown(s.smoothed[i]));
        s.smooth->data()->add(smooth, true);
    }
}

void MetricPlot::appendPoints(int id, const std::vector<double>& steps, const std::vector<double>& values) {
    Series* s = find(id);
    if (!s) return;
    const size_t n = std::min(steps.size(), values.size());
    if (n == 0) return;
    const bool inOrder = std::is_sorted(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n)) &&
                         (s->steps.empty() || steps.front() > s->steps.back());
    if (!inOrder) {
        // A resumed run re-logging old steps: merge and redraw the curve (O(curve length)).
        std::vector<double> allSteps = s->steps, allValues = s->values;
        allSteps.insert(allSteps.end(), steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
        allValues.insert(allValues.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
        replaceData(*s, std::move(allSteps), std::move(allValues));
        markDirty();
        return;
    }
    const size_t from = s->steps.size();
    s->steps.insert(s->steps.end(), steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
    s->values.insert(s->values.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
    for (size_t i = from; i < s->values.size(); ++i)
        if (!std::isfinite(s->values[i])) ++s->nonFinite;
    extendSmoothed(*s);
    fillGraphs(*s, from);
    markDirty();
}

void MetricPlot::replaceData(Series& s, std::vector<double> steps, std::vector<double> values) {
    const size_t n = std::min(steps.size(), values.size());
    steps.resize(n);
    values.resize(n);
    if (!std::is_sorted(steps.begin(), steps.end())) {
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a] < steps[b]; });
        std::vector<double> sortedSteps(n), sortedValues(n);
        for (size_t i = 0; i < n; ++i) {
            sortedSteps[i] = steps[order[i]];
            sortedValues[i] = values[order[i]];
        }
        steps.swap(sortedSteps);
        values.swap(sortedValues);
    }
    s.steps = std::move(steps);
    s.values = std::move(values);
    s.nonFinite = static_cast<int>(std::count_if(s.values.begin(), s.values.end(), [](double v) { return !std::isfinite(v); }));
    s.smoothed.clear();
    s.emaLast = 0;
    s.emaCount = 0;
    extendSmoothed(s);
    fillGraphs(s, 0);
}

void MetricPlot::setSeriesData(int id, std::vector<double> steps, std::vector<double> values) {
    Series* s = find(id);
    if (!s) return;
    replaceData(*s, std::move(steps), std::move(values));
    markDirty();
}

void MetricPlot::removeSeries(int id) {
    const auto it = std::find_if(m_series.begin(), m_series.end(), [id](const auto& s) { return s->id == id; });
    if (it == m_series.end()) return;
    for (QCPGraph* g : {(*it)->raw, (*it)->smooth, (*it)->marks}) m_plot->removeGraph(g);
    m_series.erase(it);
    // Colours stay with their runs while any series of the run is left.
    QStringList runs;
    for (const QString& run : m_runs)
        if (std::any_of(m_series.begin(), m_series.end(), [&](const auto& s) { return s->run == run; }))
            runs.push_back(run);
    m_runs = runs;
    restyleSeries();
    rebuildLegend();
    markDirty();
}

void MetricPlot::clear() {
    for (const auto& s : m_series)
        for (QCPGraph* g : {s->raw, s->smooth, s->marks}) m_plot->removeGraph(g);
    m_series.clear();
    m_runs.clear();
    hideCrosshair();
    rebuildLegend();
    markDirty();
}

void MetricPlot::setLogY(bool on) {
    if (on == m_logY) return;
    m_logY = on;
    {
        const QSignalBlocker block(m_logYBox);
        m_logYBox->setChecked(on);
    }
    withProgrammaticRange([this] {
        if (m_logY) {
            m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
            m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        } else {
            m_plot->yAxis->setScaleType(QCPAxis::stLinear);
            m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        }
    });
    for (auto& s : m_series) fillGraphs(*s, 0);
    // A y zoom made on the other scale means nothing on this one.
    fitY();
    markDirty();
    Q_EMIT logYChanged(on);
}

void MetricPlot::setSmoothing(double alpha) {
    if (!std::isfinite(alpha)) alpha = 0;
    alpha = std::clamp(alpha, 0.0, kMaxSmoothing);
    if (alpha == m_alpha) return;
    m_alpha = alpha;
    {
        const QSignalBlocker block(m_smoothingSlider);
        m_smoothingSlider->setValue(static_cast<int>(std::lround(alpha * kSliderSteps)));
    }
    m_smoothingLabel->setText(QString::number(alpha, 'f', 3));
    // A new weight changes every smoothed value: recompute from the raw points, O(total points).
    for (auto& s : m_series) {
        s->smoothed.clear();
        s->emaLast = 0;
        s->emaCount = 0;
        extendSmoothed(*s);
        fillGraphs(*s, 0);
    }
    restyleSeries();
    rebuildLegend();
    markDirty();
    Q_EMIT smoothingChanged(alpha);
}

void MetricPlot::setFollow(bool on) {
    if (on == m_follow) return;
    m_follow = on;
    {
        const QSignalBlocker block(m_followButton);
        m_followButton->setChecked(on);
    }
    markDirty();
    Q_EMIT followChanged(on);
}

void MetricPlot::setTitle(const QString& title) {
    if (title.isEmpty()) {
        if (m_title) {
            m_plot->plotLayout()->remove(m_title);
            m_plot->plotLayout()->simplify();
            m_title = nullptr;
        }
    } else {
        if (!m_title) {
            m_title = insertPlotTitleRow(m_plot, 10);
            restyle();
        }
        m_title->setText(title);
    }
    markDirty();
}

void MetricPlot::setXLabel(const QString& label) {
    m_plot->xAxis->setLabel(label);
    markDirty();
}

void MetricPlot::setYLabel(const QString& label) {
    m_plot->yAxis->setLabel(label);
    markDirty();
}

void MetricPlot::resetZoom() {
    fitX();
    fitY();
    setFollow(true);
    markDirty();
}

void MetricPlot::setSeriesVisible(int id, bool visible) {
    Series* s = find(id);
    if (!s || s->visible == visible) return;
    s->visible = visible;
    restyleSeries();
    rebuildLegend();
    if (m_follow) fitY();
    markDirty();
    Q_EMIT seriesVisibilityChanged(id, visible);
}

bool MetricPlot::isSeriesVisible(int id) const {
    const Series* s = find(id);
    return s && s->visible;
}

const std::vector<double>& MetricPlot::seriesSteps(int id) const {
    static const std::vector<double> empty;
    const Series* s = find(id);
    return s ? s->steps : empty;
}

const std::vector<double>& MetricPlot::seriesValues(int id) const {
    static const std::vector<double> empty;
    const Series* s = find(id);
    return s ? s->values : empty;
}

std::vector<double> MetricPlot::smoothedValues(int id) const {
    const Series* s = find(id);
    return s ? s->smoothed : std::vector<double>{};
}

int MetricPlot::nonFiniteCount(int id) const {
    const Series* s = find(id);
    return s ? s->nonFinite : 0;
}

QCPGraph* MetricPlot::rawGraph(int id) const {
    const Series* s = find(id);
    return s ? s->raw : nullptr;
}

QCPGraph* MetricPlot::smoothedGraph(int id) const {
    const Series* s = find(id);
    return s ? s->smooth : nullptr;
}

void MetricPlot::restyleSeries() {
    // Metrics in first-seen order: the first is solid, the others dashed, dotted, …, but only
    // when a plot mixes metrics.
    QStringList metrics;
    for (const auto& s : m_series)
        if (!metrics.contains(s->metric)) metrics.push_back(s->metric);
    for (const auto& s : m_series) {
        s->color = s->explicitColor.isValid() ? s->explicitColor
                                               : seriesColor(m_style, std::max<int>(0, m_runs.indexOf(s->run)));
        const Qt::PenStyle penStyle = metricPenStyle(std::max<int>(0, metrics.indexOf(s->metric)));
        const bool smoothing = m_alpha > 0;
        QColor faint = s->color;
        faint.setAlpha(m_style.dark ? 70 : 60);
        s->styledDensity = densityClass(s->steps.size());
        const bool dense = s->styledDensity == 2;
        const bool dots = s->styledDensity == 0;
        s->raw->setPen(QPen(smoothing ? faint : s->color, smoothing || dense ? 1.0 : 1.6, penStyle));
        s->smooth->setPen(QPen(s->color, dense ? 1.0 : 1.8, penStyle));
        QCPGraph* front = smoothing ? s->smooth : s->raw;
        QCPGraph* back = smoothing ? s->raw : s->smooth;
        front->setScatterStyle(dots ? QCPScatterStyle(QCPScatterStyle::ssDisc, s->color, s->color, 5)
                                    : QCPScatterStyle());
        back->setScatterStyle(dots && smoothing ? QCPScatterStyle(QCPScatterStyle::ssDisc, faint, faint, 4)
                                                : QCPScatterStyle());
        s->marks->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(m_style.warning, 1.5), QBrush(s->color), 9));
        s->raw->setVisible(s->visible);
        s->smooth->setVisible(s->visible && smoothing);
        s->marks->setVisible(s->visible);
    }
}

void MetricPlot::rebuildLegend() {
    QCPLegend* legend = m_plot->legend;
    legend->clearItems();
    for (const auto& s : m_series) {
        QCPGraph* front = m_alpha > 0 ? s->smooth : s->raw;
        front->addToLegend(legend);
        if (auto* item = legend->itemWithPlottable(front)) {
            // Hidden series stay in the legend (that is where they are turned back on), greyed.
            item->setTextColor(s->visible ? m_style.text : m_style.muted);
            QFont f = m_style.font;
            f.setStrikeOut(!s->visible);
            item->setFont(f);
            item->setSelectedFont(f);
            // An item clips to its own rect, which ends at the font's descent: at small sizes
            // DejaVu's underscore lies one pixel lower and vanished ("NVFP4 DEFAULT").
            item->setMargins(QMargins(0, 0, 0, 2));
        }
    }
    legend->setVisible(legend->itemCount() > 0);
}

void MetricPlot::restyle() {
    m_style = PlotStyle::fromPalette(palette(), font());
    applyPlotStyle(m_plot, m_style, m_title);
    m_crossLine->setPen(QPen(m_style.axis, 1, Qt::DashLine));
    QColor box = m_style.background;
    box.setAlpha(235);
    m_crossText->setBrush(QBrush(box));
    m_crossText->setPen(QPen(m_style.grid));
    m_crossText->setColor(m_style.text);
    m_crossText->setFont(m_style.font);
    m_emptyText->setColor(m_style.axis);
    m_emptyText->setFont(m_style.font);
    restyleSeries();
    rebuildLegend();
    markDirty();
}

void MetricPlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) restyle();
}

bool MetricPlot::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::Leave) hideCrosshair();
    return QWidget::eventFilter(watched, event);
}

void MetricPlot::markDirty() {
    if (m_replotTimer.isActive()) return;
    const qint64 since = m_sinceReplot.isValid() ? m_sinceReplot.elapsed() : kMinReplotIntervalMs;
    m_replotTimer.start(static_cast<int>(std::max<qint64>(0, kMinReplotIntervalMs - since)));
}

int MetricPlot::toolbarRows() const {
    const QMargins m = layout()->contentsMargins();
    return m_toolbar->rowCount(width() - m.left() - m.right());
}

void MetricPlot::flush() {
    if (m_follow) {
        fitX();
        fitY();
    }
    // Curves that grew past a dot or pen-width threshold since the last frame.
    if (std::any_of(m_series.begin(), m_series.end(),
                    [](const auto& s) { return densityClass(s->steps.size()) != s->styledDensity; }))
        restyleSeries();
    m_emptyText->setVisible(std::none_of(m_series.begin(), m_series.end(), [](const auto& s) { return !s->steps.empty(); }));
    m_sinceReplot.restart();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlot::withProgrammaticRange(const std::function<void()>& change) {
    const bool was = m_settingRange;
    m_settingRange = true;
    change();
    m_settingRange = was;
}

void MetricPlot::onUserRangeChange() {
    if (!m_settingRange) setFollow(false);
}

void MetricPlot::fitX() {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : m_series) {
        if (!s->visible || s->steps.empty()) continue;
        lo = std::min(lo, s->steps.front());
        hi = std::max(hi, s->steps.back());
    }
    if (!std::isfinite(lo)) {
        lo = 0;
        hi = 1;
    }
    if (hi - lo <= 0) {
        lo -= 1;
        hi += 1;
    }
    const double pad = 0.01 * (hi - lo);
    withProgrammaticRange([&] { m_plot->xAxis->setRange(lo - pad, hi + pad); });
}

void MetricPlot::fitY() {
    // Over the points in the current x range of the visible curves (raw and smoothed: the faint
    // raw curve is drawn too). O(points in range).
    const QCPRange x = m_plot->xAxis->range();
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    auto take = [&](double v) {
        if (!std::isfinite(v) || (m_logY && v <= 0)) return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    };
    for (const auto& s : m_series) {
        if (!s->visible || s->steps.empty()) continue;
        const size_t begin = static_cast<size_t>(std::lower_bound(s->steps.begin(), s->steps.end(), x.lower) - s->steps.begin());
        const size_t end = static_cast<size_t>(std::upper_bound(s->steps.begin(), s->steps.end(), x.upper) - s->steps.begin());
        for (size_t i = begin; i < end; ++i) take(s->values[i]);
        if (!s->smoothed.empty())
            for (size_t i = begin; i < end; ++i) take(s->smoothed[i]);
    }
    withProgrammaticRange([&] {
        if (!std::isfinite(lo)) {
            m_plot->yAxis->setRange(m_logY ? QCPRange(0.1, 10) : QCPRange(0, 1));
        } else if (m_logY) {
            m_plot->yAxis->setRange(lo / 1.25, hi * 1.25);
        } else {
            double pad = 0.05 * (hi - lo);
            if (pad <= 0) pad = std::fabs(hi) > 0 ? 0.1 * std::fabs(hi) : 1.0;
            m_plot->yAxis->setRange(lo - pad, hi + pad);
        }
    });
}

void MetricPlot::onWheel(QWheelEvent* event) {
    // Wheel zooms steps; Ctrl+wheel zooms values.
    m_plot->axisRect()->setRangeZoom(event->modifiers() & Qt::ControlModifier ? Qt::Vertical : Qt::Horizontal);
}

void MetricPlot::onMousePress(QMouseEvent* event) {
    m_plot->axisRect()->setRangeDrag(event->modifiers() & Qt::ControlModifier ? Qt::Horizontal | Qt::Vertical
                                                                               : Qt::Horizontal);
}

void MetricPlot::onMouseMove(QMouseEvent* event) {
    crosshairAt(event->position());
}

void MetricPlot::onDoubleClick(QMouseEvent* event) {
    // A double-click on the legend is two visibility toggles, not a reset.
    if (m_plot->legend->visible() && m_plot->legend->outerRect().contains(event->position().toPoint())) return;
    resetZoom();
}

void MetricPlot::onLegendClick(QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    auto* plottableItem = qobject_cast<QCPPlottableLegendItem*>(item);
    if (!plottableItem) return;
    for (const auto& s : m_series) {
        if (plottableItem->plottable() == s->raw || plottableItem->plottable() == s->smooth) {
            setSeriesVisible(s->id, !s->visible);
            return;
        }
    }
}

QString MetricPlot::crosshairAt(const QPointF& pos) {
    const QRect rect = m_plot->axisRect()->rect();
    const Series* nearestSeries = nullptr;
    double step = 0;
    if (rect.contains(pos.toPoint())) {
        // Snap to the data point nearest the mouse (over all visible curves), then list every
        // visible curve's point nearest that step: runs may log at different steps.
        const double x = m_plot->xAxis->pixelToCoord(pos.x());
        double best = std::numeric_limits<double>::infinity();
        for (const auto& s : m_series) {
            if (!s->visible || s->steps.empty()) continue;
            const double candidate = s->steps[nearestIndex(s->steps, x)];
            if (std::fabs(candidate - x) < best) {
                best = std::fabs(candidate - x);
                step = candidate;
                nearestSeries = s.get();
            }
        }
    }
    if (!nearestSeries) {
        hideCrosshair();
        return {};
    }
    QStringList lines{tr("step %1").arg(shortValue(step))};
    for (const auto& s : m_series) {
        if (!s->visible || s->steps.empty()) continue;
        const size_t i = nearestIndex(s->steps, step);
        QString line = s->name() + QStringLiteral("  ");
        if (!s->smoothed.empty())
            line += tr("%1 (raw %2)").arg(shortValue(s->smoothed[i]), shortValue(s->values[i]));
        else
            line += shortValue(s->values[i]);
        if (s->steps[i] != step) line += tr(" at step %1").arg(shortValue(s->steps[i]));
        lines.push_back(line);
    }
    const QString text = lines.join(QLatin1Char('\n'));
    m_crossLine->point1->setCoords(step, 0);
    m_crossLine->point2->setCoords(step, 1);
    m_crossLine->setVisible(true);
    m_crossText->setText(text);
    // Beside the line, flipped to its left near the right edge so the box stays inside.
    const double px = m_plot->xAxis->coordToPixel(step);
    const QFontMetrics fm(m_crossText->font());
    const int width = fm.boundingRect(QRect(0, 0, 4000, 4000), Qt::AlignLeft, text).width() + 14;
    const bool left = px + 12 + width > rect.right();
    m_crossText->setPositionAlignment((left ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    m_crossText->position->setCoords(left ? px - 10 : px + 10, rect.top() + 8);
    m_crossText->setVisible(true);
    m_plot->layer(QStringLiteral("overlay"))->replot();
    return text;
}

QString MetricPlot::crosshairText() const {
    return m_crossText->visible() ? m_crossText->text() : QString();
}

void MetricPlot::hideCrosshair() {
    if (!m_crossText->visible() && !m_crossLine->visible()) return;
    m_crossText->setVisible(false);
    m_crossLine->setVisible(false);
    m_plot->layer(QStringLiteral("overlay"))->replot();
}

QString MetricPlot::csv() const {
    QStringList header{m_keyName};
    for (const auto& s : m_series) header.push_back(csvField(s->column()));
    const bool smoothing = m_alpha > 0;
    if (smoothing)
        for (const auto& s : m_series) header.push_back(csvField(s->column() + QStringLiteral(" (smoothed)")));
    QString out = header.join(QLatin1Char(',')) + QLatin1Char('\n');

    // Merge the curves by step: one row per distinct step (a repeated step gets one row per
    // repetition).
    const size_t count = m_series.size();
    std::vector<size_t> next(count, 0);
    for (;;) {
        double step = std::numeric_limits<double>::infinity();
        for (size_t k = 0; k < count; ++k)
            if (next[k] < m_series[k]->steps.size()) step = std::min(step, m_series[k]->steps[next[k]]);
        if (!std::isfinite(step)) break;
        QStringList raw, smooth;
        for (size_t k = 0; k < count; ++k) {
            const Series& s = *m_series[k];
            if (next[k] < s.steps.size() && s.steps[next[k]] == step) {
                raw.push_back(shortestNumber(s.values[next[k]]));
                if (smoothing) smooth.push_back(shortestNumber(s.smoothed[next[k]]));
                ++next[k];
            } else {
                raw.push_back(QString());
                if (smoothing) smooth.push_back(QString());
            }
        }
        out += shortestNumber(step) + QLatin1Char(',') + raw.join(QLatin1Char(','));
        if (smoothing) out += QLatin1Char(',') + smooth.join(QLatin1Char(','));
        out += QLatin1Char('\n');
    }
    return out;
}

void MetricPlot::showContextMenu(const QPoint& pos) {
    QMenu menu(this);
    addPlotExportActions(&menu, m_plot, m_exportName, [this] { return csv(); });
    menu.addSeparator();
    addCheckableAction(&menu, tr("Log y"), m_logY, this, [this](bool on) { setLogY(on); });
    addCheckableAction(&menu, tr("Follow newest step"), m_follow, this, [this](bool on) { setFollow(on); });
    menu.addAction(tr("Reset zoom"), this, [this] { resetZoom(); });
    menu.exec(m_plot->mapToGlobal(pos));
}

}  // namespace ql
