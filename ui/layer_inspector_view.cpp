// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/layer_inspector_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "plots/bar_chart.h"
#include "plots/flow_layout.h"
#include "plots/heatmap_plot.h"
#include "plots/histogram_plot.h"
#include "plots/scale_histogram_plot.h"
#include "ui/combo_width.h"
#include "ui/importance_panel.h"
#include "ui/depth_view.h"
#include "ui/token_explorer_view.h"

namespace ql {
namespace {

QString num(double v, int precision = 4) {
    if (std::isnan(v)) return QStringLiteral("—");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
    return QString::number(v, 'g', precision);
}

HistogramPlot::Histogram toPlot(const HistogramData& h, const QString& label) {
    HistogramPlot::Histogram out;
    out.lo = h.lo;
    out.hi = h.hi;
    out.counts = h.counts;
    out.label = label;
    return out;
}

void setRow(QTableWidget* t, int row, const QString& name, const QString& value, const QString& tip = {}) {
    auto* a = new QTableWidgetItem(name);
    auto* b = new QTableWidgetItem(value);
    b->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    a->setToolTip(tip);
    b->setToolTip(tip);
    t->setItem(row, 0, a);
    t->setItem(row, 1, b);
}

QTableWidget* makeTable(QWidget* parent, const QStringList& headers, const QString& name) {
    auto* t = new QTableWidget(parent);
    t->setObjectName(name);
    t->setColumnCount(headers.size());
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->setVisible(false);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

}  // namespace

LayerInspectorView::LayerInspectorView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    // The controls wrap onto a second row in a narrow window (1280 pixels) instead of widening it.
    auto* bar = new FlowLayout(nullptr, 8, 4);
    m_compute = new QPushButton(tr("Compute Statistics"), this);
    m_compute->setObjectName(QStringLiteral("computeStats"));
    m_compute->setToolTip(tr("Histograms, outliers, block scales and the SQNR of every format for every layer of the open "
                             "model, with calibration activations (stored in the project)."));
    bar->addWidget(m_compute);
    m_layer = new QComboBox(this);
    m_layer->setObjectName(QStringLiteral("inspectLayer"));
    limitComboWidth(m_layer, 28);
    bar->addGroup(this, {new QLabel(tr("Layer"), this), m_layer});
    m_format = new QComboBox(this);
    m_format->setObjectName(QStringLiteral("inspectFormat"));
    m_source = new QComboBox(this);
    m_source->setObjectName(QStringLiteral("inspectSource"));
    m_source->addItems({tr("Weights"), tr("Activations")});
    m_source->setToolTip(tr("Weights, or the layer's inputs on the calibration data"));
    bar->addGroup(this, {new QLabel(tr("Format"), this), m_format, m_source});
    m_logCount = new QCheckBox(tr("Log count"), this);
    m_logCount->setObjectName(QStringLiteral("inspectLogCount"));
    m_logCount->setChecked(true);
    bar->addWidget(m_logCount);
    m_overlay = new QComboBox(this);
    m_overlay->setObjectName(QStringLiteral("inspectOverlay"));
    m_overlay->setToolTip(tr("Draw the same layer of another checkpoint (e.g. after QAT/QAD) as an outline"));
    m_overlay->addItem(tr("(none)"), QString());
    // Run names hold model paths (a sentence-transformers folder deep in a venv).
    limitComboWidth(m_overlay, 24);
    bar->addGroup(this, {new QLabel(tr("Overlay"), this), m_overlay});
    m_firstBlock = new QPushButton(tr("First Block in Format Explorer"), this);
    m_firstBlock->setObjectName(QStringLiteral("firstBlock"));
    m_firstBlock->setToolTip(tr("Quantize this layer's first block of weights step by step in the Format Explorer"));
    bar->addWidget(m_firstBlock);
    layout->addLayout(bar);
    m_status = new QLabel(tr("No statistics yet: open a model and press Compute Statistics."), this);
    m_status->setObjectName(QStringLiteral("inspectStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("inspectTabs"));
    layout->addWidget(m_tabs, 1);

    auto* histSplit = new QSplitter(Qt::Horizontal, m_tabs);
    m_histogram = new HistogramPlot(histSplit);
    m_histogram->setObjectName(QStringLiteral("layerHistogram"));
    m_summary = makeTable(histSplit, {tr("Statistic"), tr("Value")}, QStringLiteral("layerSummary"));
    m_summary->setMinimumWidth(260);
    histSplit->setStretchFactor(0, 3);
    histSplit->setStretchFactor(1, 1);
    m_tabs->addTab(histSplit, tr("Histogram"));
    histSplit->setObjectName(QStringLiteral("histogram"));

    auto* scaleBox = new QWidget(m_tabs);
    scaleBox->setObjectName(QStringLiteral("scales"));
    auto* scaleLayout = new QVBoxLayout(scaleBox);
    m_scales = new ScaleHistogramPlot(scaleBox);
    m_scales->setObjectName(QStringLiteral("scaleHistogram"));
    scaleLayout->addWidget(m_scales);
    m_tabs->addTab(scaleBox, tr("Scales"));

    auto* outSplit = new QSplitter(Qt::Horizontal, m_tabs);
    outSplit->setObjectName(QStringLiteral("outliers"));
    m_channels = new BarChart(outSplit);
    m_channels->setObjectName(QStringLiteral("channelAbsmax"));
    m_channels->setLabelTop(8);
    m_channels->setValueLabel(tr("absmax"));
    m_outliers = makeTable(outSplit, {tr("Rank"), tr("Row"), tr("Column"), tr("Value")}, QStringLiteral("topOutliers"));
    outSplit->setStretchFactor(0, 3);
    outSplit->setStretchFactor(1, 1);
    m_tabs->addTab(outSplit, tr("Outliers"));

    m_heatmap = new HeatmapPlot(m_tabs);
    m_heatmap->setObjectName(QStringLiteral("heatmap"));
    m_tabs->addTab(m_heatmap, tr("Error Heatmap"));

    auto* sensBox = new QWidget(m_tabs);
    sensBox->setObjectName(QStringLiteral("sensitivity"));
    auto* sensLayout = new QVBoxLayout(sensBox);
    auto* sensBar = new QHBoxLayout;
    auto* runSens = new QPushButton(tr("Measure Sensitivity"), sensBox);
    runSens->setObjectName(QStringLiteral("runSensitivity"));
    runSens->setToolTip(tr("Quantize one layer at a time with the current preset and measure the KL to the full-precision "
                           "model; then search the mixed-precision recipe within the bit budget."));
    m_budget = new QDoubleSpinBox(sensBox);
    m_budget->setObjectName(QStringLiteral("bitsBudget"));
    m_budget->setRange(0, 16);
    m_budget->setDecimals(2);
    m_budget->setSingleStep(0.25);
    m_budget->setValue(5.0);
    m_budget->setSuffix(tr(" bits/weight"));
    m_budget->setToolTip(tr("Budget for the automatic mixed-precision choice (0: no search)"));
    sensBar->addWidget(runSens);
    sensBar->addWidget(new QLabel(tr("Budget"), sensBox));
    sensBar->addWidget(m_budget);
    sensBar->addStretch(1);
    sensLayout->addLayout(sensBar);
    m_sensitivityNote = new QLabel(tr("Per-layer sensitivity: KL to the FP model when only that layer is quantized."), sensBox);
    m_sensitivityNote->setWordWrap(true);
    sensLayout->addWidget(m_sensitivityNote);
    m_sensitivity = new BarChart(sensBox);
    m_sensitivity->setObjectName(QStringLiteral("sensitivityChart"));
    m_sensitivity->setHorizontal(true);
    m_sensitivity->setValueLabel(tr("KL to FP (nats/token)"));
    m_sensitivity->setHigherIsBetter(false);
    sensLayout->addWidget(m_sensitivity, 1);
    m_tabs->addTab(sensBox, tr("Sensitivity"));

    m_depth = new DepthView(m_tabs);
    m_depth->setObjectName(QStringLiteral("depth"));
    m_tabs->addTab(m_depth, tr("Depth"));
    m_tokens = new TokenExplorerView(m_tabs);
    m_tokens->setObjectName(QStringLiteral("tokens"));
    m_tabs->addTab(m_tokens, tr("Tokens"));
    connect(m_depth, &DepthView::measureRequested, this, &LayerInspectorView::divergenceRequested);
    connect(m_tokens, &TokenExplorerView::layerRequested, this, [this](const QString& layer) {
        m_source->setCurrentIndex(0);
        if (selectLayer(layer)) {
            showTab(QStringLiteral("histogram"));
            return;
        }
        // No statistics of that layer yet: compute them, then show it.
        m_pendingLayer = layer;
        m_status->setText(tr("Computing the statistics to show the histogram of %1 …").arg(layer));
        emit computeRequested();
    });

    m_importance = new ImportancePanel(m_tabs);
    m_importance->setObjectName(QStringLiteral("importance"));
    m_tabs->addTab(m_importance, tr("Importance"));

    connect(m_compute, &QPushButton::clicked, this, &LayerInspectorView::computeRequested);
    connect(runSens, &QPushButton::clicked, this, [this] { emit sensitivityRequested(m_budget->value()); });
    connect(m_layer, &QComboBox::currentIndexChanged, this, [this] {
        if (m_updating) return;
        m_channel.reset();
        refresh();
    });
    connect(m_format, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_updating) refresh();
    });
    connect(m_source, &QComboBox::currentIndexChanged, this, [this] {
        m_channel.reset();
        refresh();
    });
    connect(m_logCount, &QCheckBox::toggled, m_histogram, &HistogramPlot::setLogCount);
    m_histogram->setLogCount(true);
    connect(m_overlay, &QComboBox::currentIndexChanged, this, [this] {
        const QString folder = m_overlay->currentData().toString();
        if (folder.isEmpty())
            setCompareReport(std::nullopt, QString());
        else
            emit compareRequested(folder);
    });
    connect(m_firstBlock, &QPushButton::clicked, this, [this] {
        const LayerStatistics* l = layerStats(currentLayer());
        if (l && !l->first_block.empty()) emit firstBlockRequested(currentFormat(), l->first_block);
    });
    connect(m_channels, qOverload<const QString&>(&BarChart::barClicked), this, [this](const QString& label) {
        bool ok = false;
        const int channel = label.section(QLatin1Char(' '), -1).toInt(&ok);
        if (ok) emit channelRequested(currentLayer(), channel);
    });
    connect(m_heatmap, &HeatmapPlot::cellClicked, this, [this](int row, int col) {
        if (!m_report || row < 0 || col < 0) return;
        if (row >= static_cast<int>(m_report->layers.size()) || col >= static_cast<int>(m_report->formats.size())) return;
        selectLayer(QString::fromStdString(m_report->layers[row].layer));
        selectFormat(QString::fromStdString(m_report->formats[col]));
        m_source->setCurrentIndex(0);
        showTab(QStringLiteral("histogram"));
    });
    connect(m_sensitivity, qOverload<const QString&>(&BarChart::barClicked), this, [this](const QString& layer) {
        if (selectLayer(layer)) showTab(QStringLiteral("histogram"));
    });
    m_firstBlock->setEnabled(false);
}

void LayerInspectorView::setDivergenceRuns(const QList<DivergenceRun>& runs) {
    m_depth->setRuns(runs);
    m_tokens->setRuns(runs);
}

void LayerInspectorView::setOverlayChoices(const QList<QPair<QString, QString>>& choices) {
    m_depth->setCheckpointChoices(choices);
    const QString current = m_overlay->currentData().toString();
    m_updating = true;
    m_overlay->clear();
    m_overlay->addItem(tr("(none)"), QString());
    for (const auto& [label, folder] : choices) m_overlay->addItem(label, folder);
    const int i = m_overlay->findData(current);
    m_overlay->setCurrentIndex(i >= 0 ? i : 0);
    m_updating = false;
}

void LayerInspectorView::setReport(const LayerStatsReport& report) {
    m_report = report;
    m_channel.reset();
    rebuildSelectors();
    m_status->setText(tr("%1 layers × %2 formats of %3, computed in %4 s.")
                          .arg(report.layers.size())
                          .arg(report.formats.size())
                          .arg(QString::fromStdString(report.model_path))
                          .arg(report.seconds, 0, 'f', 1));
    refreshHeatmap();
    refresh();
    if (!m_pendingLayer.isEmpty()) {
        if (selectLayer(m_pendingLayer)) showTab(QStringLiteral("histogram"));
        m_pendingLayer.clear();
    }
}

void LayerInspectorView::setCompareReport(const std::optional<LayerStatsReport>& report, const QString& label) {
    m_compare = report;
    m_compareLabel = label;
    refresh();
}

void LayerInspectorView::setSensitivity(const SensitivityReport& report) {
    m_sensitivityReport = report;
    refreshSensitivity();
}

void LayerInspectorView::showActivations(bool activations) { m_source->setCurrentIndex(activations ? 1 : 0); }

void LayerInspectorView::setChannelStatistics(int channel, const TensorStatistics& stats) {
    m_channel = std::make_pair(channel, stats);
    m_source->setCurrentIndex(0);
    refresh();
    showTab(QStringLiteral("histogram"));
}

const LayerStatistics* LayerInspectorView::layerStats(const QString& layer) const {
    if (!m_report) return nullptr;
    for (const LayerStatistics& l : m_report->layers)
        if (QString::fromStdString(l.layer) == layer) return &l;
    return nullptr;
}

const FormatFit* LayerInspectorView::fit(const LayerStatistics& l, const QString& format) const {
    for (const FormatFit& f : l.fits)
        if (QString::fromStdString(f.format) == format) return &f;
    return nullptr;
}

void LayerInspectorView::rebuildSelectors() {
    const QString layer = currentLayer(), format = currentFormat();
    m_updating = true;
    m_layer->clear();
    m_format->clear();
    if (m_report) {
        for (const LayerStatistics& l : m_report->layers) m_layer->addItem(QString::fromStdString(l.layer));
        for (const std::string& f : m_report->formats) m_format->addItem(QString::fromStdString(f));
        // The chosen format of the recipe first, if any layer has one.
        for (const LayerStatistics& l : m_report->layers)
            if (!l.chosen_format.empty()) {
                const int i = m_format->findText(QString::fromStdString(l.chosen_format));
                if (i >= 0) m_format->setCurrentIndex(i);
                break;
            }
    }
    if (m_layer->findText(layer) >= 0) m_layer->setCurrentIndex(m_layer->findText(layer));
    if (m_format->findText(format) >= 0) m_format->setCurrentIndex(m_format->findText(format));
    m_updating = false;
}

bool LayerInspectorView::selectLayer(const QString& layer) {
    const int i = m_layer->findText(layer);
    if (i < 0) return false;
    m_layer->setCurrentIndex(i);
    return true;
}

bool LayerInspectorView::selectFormat(const QString& format) {
    const int i = m_format->findText(format);
    if (i < 0) return false;
    m_format->setCurrentIndex(i);
    return true;
}

void LayerInspectorView::setShowActivations(bool on) { m_source->setCurrentIndex(on ? 1 : 0); }
QString LayerInspectorView::currentLayer() const { return m_layer->currentText(); }
QString LayerInspectorView::currentFormat() const { return m_format->currentText(); }

void LayerInspectorView::showTab(const QString& id) {
    for (int i = 0; i < m_tabs->count(); ++i)
        if (m_tabs->widget(i)->objectName() == id) m_tabs->setCurrentIndex(i);
}

QString LayerInspectorView::currentTab() const { return m_tabs->currentWidget()->objectName(); }

void LayerInspectorView::refresh() {
    const LayerStatistics* l = layerStats(currentLayer());
    m_firstBlock->setEnabled(l && !l->first_block.empty());
    if (!l) return;
    const FormatFit* f = fit(*l, currentFormat());
    refreshHistogram(*l, f);
    refreshScales(*l);
    refreshOutliers(*l);
    m_heatmap->setSelectedCell(m_layer->currentIndex(), m_format->currentIndex());
}

void LayerInspectorView::refreshHistogram(const LayerStatistics& l, const FormatFit* f) {
    const bool activations = m_source->currentIndex() == 1;
    const QString layer = QString::fromStdString(l.layer);
    const TensorStatistics* s = activations ? (l.has_activation ? &l.activation : nullptr) : &l.weight;
    // KV-cache records (kind "kv_cache") hold the cached keys or values where weights would be.
    const bool cache = l.kind == "kv_cache";
    const bool keys = cache && l.layer.find(".k_cache") != std::string::npos;
    QString what = activations ? tr("inputs") : cache ? (keys ? tr("cached keys (after RoPE)") : tr("cached values")) : tr("weights");
    if (m_channel && !activations) {
        s = &m_channel->second;
        what = tr("weights of output channel %1").arg(m_channel->first);
    }
    m_summary->setRowCount(0);
    if (!s) {
        m_histogram->setHistogram({});
        m_histogram->setTitle(tr("%1: no activation statistics (compute with calibration data)").arg(layer));
        return;
    }
    m_histogram->setTitle(tr("%1 — %2").arg(layer, what));
    m_histogram->setAxisLabel(activations ? tr("input value") : cache ? (keys ? tr("key value") : tr("value")) : tr("weight value"));
    m_histogram->setHistogram(toPlot(s->histogram, what));
    // The format's grid: weights only (the activation grid depends on each block's dynamic scale).
    if (f && !activations && f->error.empty()) {
        m_histogram->setGrid(f->grid, tr("%1 values at the largest scale").arg(QString::fromStdString(f->format)));
        m_histogram->setClipThresholds(-f->clip_threshold, f->clip_threshold);
    } else {
        m_histogram->setGrid({}, QString());
        m_histogram->clearClipThresholds();
    }
    std::vector<double> outliers;
    for (const OutlierEntry& o : s->top_outliers) outliers.push_back(o.value);
    m_histogram->setOutliers(outliers);
    const LayerStatistics* other = nullptr;
    if (m_compare)
        for (const LayerStatistics& c : m_compare->layers)
            if (c.layer == l.layer) other = &c;
    if (other && !m_channel) {
        const TensorStatistics& o = activations ? other->activation : other->weight;
        m_histogram->setOverlay(toPlot(o.histogram, m_compareLabel));
    } else {
        m_histogram->setOverlay({});
    }

    QStringList rows;
    int r = 0;
    auto add = [&](const QString& name, const QString& value, const QString& tip = {}) {
        m_summary->insertRow(r);
        setRow(m_summary, r++, name, value, tip);
    };
    add(tr("elements"), QString::number(s->numel));
    add(tr("amax"), num(s->amax));
    add(tr("mean ± std"), QStringLiteral("%1 ± %2").arg(num(s->mean, 3), num(s->std, 3)));
    add(tr("kurtosis"), num(s->kurtosis), tr("m4 / m2²: 3 for a Gaussian; heavy tails (outliers) make it large"));
    add(tr("max / mean |x|"), num(s->max_over_mean_abs), tr("how far the largest value is from the typical one"));
    for (const auto& [p, v] : s->percentiles) add(tr("P%1 |x|").arg(p), num(v));
    if (s->nan_count || s->inf_count) add(tr("NaN / Inf"), QStringLiteral("%1 / %2").arg(s->nan_count).arg(s->inf_count));
    if (f && !activations) {
        if (!f->error.empty()) {
            add(QString::fromStdString(f->format), QString::fromStdString(f->error));
        } else {
            add(tr("format"), QString::fromStdString(f->settings.empty() ? f->format : f->settings));
            add(tr("clipped"), QStringLiteral("%1 %").arg(100.0 * f->clipped_fraction, 0, 'g', 3),
                tr("elements beyond the largest value their scale can represent"));
            add(tr("weight MSE"), num(f->weight_mse));
            add(tr("weight SQNR"), tr("%1 dB").arg(num(f->weight_sqnr_db)));
            add(tr("output SQNR"), tr("%1 dB").arg(num(f->output_sqnr_db)), tr("y = x Wᵀ on calibration inputs, weights quantized"));
            add(tr("output SQNR, W+A"), tr("%1 dB").arg(num(f->wa_output_sqnr_db)), tr("weights and inputs quantized"));
        }
    }
    if (activations && l.input_amax > 0) {
        add(tr("calibrated amax"), num(l.input_amax));
        add(tr("inputs clipped"), QStringLiteral("%1 %").arg(100.0 * l.input_clipped_fraction, 0, 'g', 3));
    }
    const LlmInt8Decomposition& d = l.llm_int8;
    if (activations && d.threshold > 0 && !m_channel) {
        const int64_t features = l.weight_shape.size() > 1 ? l.weight_shape[1] : 0;
        add(tr("LLM.int8 FP16 features"), tr("%1 of %2 (≥ %3)").arg(d.columns.size()).arg(features).arg(num(d.threshold)),
            tr("bitsandbytes computes a feature column in FP16 when any token of the call has |x| ≥ %1 there").arg(num(d.threshold)));
        add(tr("FP16 FLOPs, one batch"), QStringLiteral("%1 %").arg(100.0 * d.batch_flop_share, 0, 'g', 3),
            tr("all %1 sampled tokens in one call (prefill)").arg(d.tokens));
        add(tr("FP16 FLOPs, per token"), QStringLiteral("%1 %").arg(100.0 * d.token_flop_share, 0, 'g', 3),
            tr("one token per call (decoding), averaged over the sampled tokens"));
        size_t most = 0;
        for (size_t i = 1; i < d.column_token_share.size(); ++i)
            if (d.column_token_share[i] > d.column_token_share[most]) most = i;
        if (!d.columns.empty())
            add(tr("most often in FP16"), tr("feature %1: %2 % of tokens").arg(d.columns[most]).arg(100.0 * d.column_token_share[most], 0, 'g', 3));
    }
}

void LayerInspectorView::refreshScales(const LayerStatistics& l) {
    // NVFP4 against MXFP4 when both were measured: the picture of why NVFP4 keeps small signals.
    const FormatFit* nv = fit(l, QStringLiteral("nvfp4"));
    const FormatFit* mx = fit(l, QStringLiteral("mxfp4"));
    const FormatFit* chosen = fit(l, currentFormat());
    m_scales->setTitle(tr("%1 — block scales").arg(QString::fromStdString(l.layer)));
    if (nv && mx && nv->error.empty() && mx->error.empty()) {
        // NVFP4's effective block scale includes the global scale: compare like with like.
        std::vector<double> nvScales = nv->block_scales;
        for (double& s : nvScales) s *= nv->global_scale;
        m_scales->setScales(0, nvScales, tr("NVFP4: E4M3 × FP32 global"));
        m_scales->setScales(1, mx->block_scales, tr("MXFP4: E8M0 (powers of two)"));
        m_scales->setCaption(tr("E4M3 block scales take 8 values per binade, so each block of 16 is scaled close to its own "
                                "amax; E8M0 scales are powers of two, so a block whose amax sits just above a power of two "
                                "loses up to one binade of resolution — small values fall to zero more often in MXFP4."));
    } else if (chosen && chosen->error.empty()) {
        m_scales->setScales(0, chosen->block_scales, QString::fromStdString(chosen->format));
        m_scales->clearScales(1);
        m_scales->setCaption(tr("Scales of %1 (%2).").arg(QString::fromStdString(chosen->format), QString::fromStdString(chosen->scale_kind)));
    } else {
        m_scales->clearScales(0);
        m_scales->clearScales(1);
        m_scales->setCaption(QString());
    }
}

void LayerInspectorView::refreshOutliers(const LayerStatistics& l) {
    const bool activations = m_source->currentIndex() == 1 && l.has_activation;
    const TensorStatistics& s = activations ? l.activation : l.weight;
    QVector<BarChart::Bar> bars;
    // The top channels stand out; the rest give the context of the typical channel.
    std::vector<int> order(s.channel_absmax.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return s.channel_absmax[a] > s.channel_absmax[b]; });
    const int top = std::min<int>(8, static_cast<int>(order.size()));
    std::vector<bool> isTop(order.size(), false);
    // Activations: the features LLM.int8() would compute in FP16 are the ones that stand out.
    const LlmInt8Decomposition& d = l.llm_int8;
    const bool fp16Features = activations && d.threshold > 0 && !d.columns.empty();
    if (fp16Features) {
        for (int64_t c : d.columns)
            if (c >= 0 && c < static_cast<int64_t>(isTop.size())) isTop[static_cast<size_t>(c)] = true;
    } else {
        for (int i = 0; i < top; ++i) isTop[order[i]] = true;
    }
    for (size_t c = 0; c < s.channel_absmax.size(); ++c) {
        BarChart::Bar b;
        b.label = (activations ? tr("feature %1") : tr("channel %1")).arg(c);
        b.value = s.channel_absmax[c];
        b.highlighted = isTop[c];
        b.tooltip = tr("absmax %1 — click for this channel's histogram").arg(num(s.channel_absmax[c]));
        bars.push_back(b);
    }
    m_channels->setTitle(tr("%1 — per-%2 absmax").arg(QString::fromStdString(l.layer), activations ? tr("feature") : tr("output channel")));
    m_channels->setHighlightLabel(fp16Features ? tr("FP16 under LLM.int8 (≥ %1): %2 features, %3 % of FLOPs")
                                                     .arg(num(d.threshold)).arg(d.columns.size()).arg(100.0 * d.batch_flop_share, 0, 'g', 3)
                                               : tr("top %1").arg(top));
    m_channels->setBars(bars);
    m_outliers->setRowCount(static_cast<int>(s.top_outliers.size()));
    for (int i = 0; i < static_cast<int>(s.top_outliers.size()); ++i) {
        const OutlierEntry& o = s.top_outliers[i];
        m_outliers->setItem(i, 0, new QTableWidgetItem(QString::number(i + 1)));
        m_outliers->setItem(i, 1, new QTableWidgetItem(o.index.size() > 0 ? QString::number(o.index[0]) : QString()));
        m_outliers->setItem(i, 2, new QTableWidgetItem(o.index.size() > 1 ? QString::number(o.index[1]) : QString()));
        m_outliers->setItem(i, 3, new QTableWidgetItem(num(o.value, 6)));
    }
}

void LayerInspectorView::refreshHeatmap() {
    if (!m_report) return;
    QStringList rows, cols;
    std::vector<std::vector<double>> values;
    for (const std::string& f : m_report->formats) cols << QString::fromStdString(f);
    bool anyOutput = false;
    for (const LayerStatistics& l : m_report->layers)
        for (const FormatFit& f : l.fits) anyOutput = anyOutput || std::isfinite(f.output_sqnr_db);
    for (const LayerStatistics& l : m_report->layers) {
        rows << QString::fromStdString(l.layer);
        std::vector<double> row;
        for (const std::string& format : m_report->formats) {
            const FormatFit* f = fit(l, QString::fromStdString(format));
            row.push_back(!f || !f->error.empty() ? std::nan("") : anyOutput ? f->output_sqnr_db : f->weight_sqnr_db);
        }
        values.push_back(std::move(row));
    }
    m_heatmap->setData(rows, cols, values, anyOutput ? tr("output SQNR (dB)") : tr("weight SQNR (dB)"));
}

void LayerInspectorView::refreshSensitivity() {
    if (!m_sensitivityReport || m_sensitivityReport->recipes.empty()) return;
    const SensitivityReport& r = *m_sensitivityReport;
    // Token models rank layers by KL to the FP logits; sentence encoders by the cosine loss
    // 1 - cos(FP, quantized) of their sentence embeddings.
    const bool encoder = r.metric == "cosine_loss";
    const QString metric = encoder ? tr("1 − cos") : tr("KL");
    QVector<BarChart::Bar> bars;
    int kept = 0;
    for (const SensitivityRow& row : r.layers) {
        const std::vector<double>& costs = encoder ? row.cosine_loss : row.kl;
        if (costs.empty()) continue;
        BarChart::Bar b;
        b.label = QString::fromStdString(row.layer);
        b.value = costs.front();
        // Highlighted: the automatic mixed-precision search gave this layer more bits than the
        // first (cheapest) candidate.
        b.highlighted = !row.chosen.empty() && row.chosen != r.recipes.front();
        kept += b.highlighted ? 1 : 0;
        b.tooltip = tr("%1 %2 with %3; chosen: %4")
                        .arg(metric, num(costs.front()), QString::fromStdString(r.recipes.front()),
                             QString::fromStdString(row.chosen.empty() ? "—" : row.chosen));
        bars.push_back(b);
    }
    m_sensitivity->setValueLabel(encoder ? tr("1 − cosine to the FP embeddings") : tr("KL to FP (nats/token)"));
    m_sensitivity->setHighlightLabel(tr("given more bits by the mixed-precision search"));
    m_sensitivity->setBars(bars, true);
    QString note = encoder ? tr("Cosine loss 1 − cos(FP, quantized) of the sentence embeddings when only that layer is "
                                "quantized with %1.")
                                 .arg(QString::fromStdString(r.recipes.front()))
                           : tr("KL to the FP model when only that layer is quantized with %1 (FP loss %2).")
                                 .arg(QString::fromStdString(r.recipes.front()), num(r.fp_loss));
    if (!r.mixed_recipe_json.empty())
        note += tr(" Mixed precision: %1 bits/weight, %2 %3 (predicted %4); %5 layers kept at higher precision.")
                    .arg(num(r.mixed_bits_per_weight, 3), metric, num(encoder ? r.mixed_cosine_loss : r.mixed_kl, 3),
                         num(r.mixed_predicted_kl, 3))
                    .arg(kept);
    m_sensitivityNote->setText(note);
}

}  // namespace ql
