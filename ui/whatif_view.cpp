// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/whatif_view.h"

#include <QColor>
#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "plots/bar_chart.h"
#include "plots/flow_layout.h"
#include "plots/histogram_plot.h"

namespace ql {
namespace {

QString num(double v, int precision = 3) {
    if (std::isnan(v)) return QStringLiteral("—");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
    return QString::number(v, 'g', precision);
}

QString bytes(double b) {
    if (b >= 1024.0 * 1024.0) return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024.0), 0, 'f', 2);
    if (b >= 1024.0) return QStringLiteral("%1 KiB").arg(b / 1024.0, 0, 'f', 1);
    return QStringLiteral("%1 B").arg(b, 0, 'f', 0);
}

// "before → after" with the after value coloured by whether it is better (lowerIsBetter).
QTableWidgetItem* change(double before, double after, bool lowerIsBetter) {
    auto* item = new QTableWidgetItem(QStringLiteral("%1 → %2").arg(num(before), num(after)));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (std::isfinite(before) && std::isfinite(after) && std::fabs(after - before) > 1e-9 * std::max(1.0, std::fabs(before))) {
        const bool better = lowerIsBetter ? after < before : after > before;
        item->setForeground(better ? QColor(0x1b, 0x7f, 0x3b) : QColor(0xb0, 0x30, 0x30));
    }
    item->setData(Qt::UserRole, after - before);
    return item;
}

HistogramPlot::Histogram toPlot(const HistogramData& h, const QString& label) {
    HistogramPlot::Histogram out;
    out.lo = h.lo;
    out.hi = h.hi;
    out.counts = h.counts;
    out.label = label;
    return out;
}

}  // namespace

WhatIfView::WhatIfView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    // The controls wrap onto a second row in a narrow window (1280 pixels) instead of widening it.
    auto* bar = new FlowLayout(nullptr, 10, 4);
    m_model = new QLabel(tr("No model open"), this);
    m_model->setObjectName(QStringLiteral("whatIfModel"));
    bar->addWidget(m_model);
    auto* kvLabel = new QLabel(tr("KV cache"), this);
    m_kv = new QComboBox(this);
    m_kv->setObjectName(QStringLiteral("whatIfKvCache"));
    m_kv->addItem(tr("off (16-bit)"), QStringLiteral("none"));
    for (const char* k : {"fp8", "fp8_cast", "fp8_head", "nvfp4", "nvfp4_cast", "nvfp4_rotate", "int8", "int8_head", "int4"})
        m_kv->addItem(QString::fromLatin1(k), QString::fromLatin1(k));
    m_kv->setToolTip(tr("The KV-cache format to try (Model Optimizer's --kv_cache_qformat names): keys after RoPE and "
                        "values quantized as the cache stores them."));
    bar->addGroup(this, {kvLabel, m_kv});
    auto* rotationLabel = new QLabel(tr("Rotation"), this);
    m_rotation = new QComboBox(this);
    m_rotation->setObjectName(QStringLiteral("whatIfRotation"));
    m_rotation->addItem(tr("none"), QStringLiteral("none"));
    m_rotation->addItem(tr("Hadamard (R1 R2 R4)"), QStringLiteral("hadamard"));
    m_rotation->addItem(tr("RHT (rotate before quantize)"), QStringLiteral("rht"));
    m_rotation->setToolTip(tr("Hadamard: QuaRot-style rotations fused into the weights (residual stream, attention "
                              "heads) plus an online one before down_proj. RHT: Model Optimizer's blockwise rotation "
                              "of every quantized layer's input and weight. Both leave the FP model unchanged."));
    bar->addGroup(this, {rotationLabel, m_rotation});
    m_samples = new QSpinBox(this);
    m_samples->setObjectName(QStringLiteral("whatIfSamples"));
    m_samples->setRange(1, 512);
    m_samples->setValue(16);
    m_samples->setSuffix(tr(" samples"));
    m_samples->setToolTip(tr("Calibration examples for the two quick PTQ runs (RTN weights, max calibration); the output "
                             "error is measured on twice as many held-out examples."));
    bar->addWidget(m_samples);
    m_compute = new QPushButton(tr("Compare"), this);
    m_compute->setObjectName(QStringLiteral("whatIfCompute"));
    m_compute->setToolTip(tr("Quantize the open model with the editor's recipe without and with this choice and compare "
                             "(a job: progress and Cancel in the run bar; the window stays responsive)."));
    bar->addWidget(m_compute);
    m_runPtq = new QPushButton(tr("Run PTQ with this"), this);
    m_runPtq->setObjectName(QStringLiteral("whatIfRunPtq"));
    m_runQad = new QPushButton(tr("Run QAD with this"), this);
    m_runQad->setObjectName(QStringLiteral("whatIfRunQad"));
    for (QPushButton* b : {m_runPtq, m_runQad})
        b->setToolTip(tr("Put this KV-cache format and rotation into the recipe editor and start the full run with the "
                         "recipe's own algorithm and the editor's settings."));
    bar->addWidget(m_runPtq);
    bar->addWidget(m_runQad);
    layout->addLayout(bar);

    m_summary = new QLabel(tr("Choose a KV-cache format and a rotation, then Compare."), this);
    m_summary->setObjectName(QStringLiteral("whatIfSummary"));
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_notes = new QLabel(this);
    m_notes->setObjectName(QStringLiteral("whatIfNotes"));
    m_notes->setWordWrap(true);
    m_notes->setVisible(false);
    layout->addWidget(m_notes);
    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("whatIfMessage"));
    m_message->setWordWrap(true);
    m_message->setVisible(false);
    layout->addWidget(m_message);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("whatIfTable"));
    m_table->setColumnCount(6);
    m_table->setHorizontalHeaderLabels(
        {tr("Tensor"), tr("Quantizer"), tr("Kurtosis"), tr("max|x| / RMS"), tr("SQNR dB"), tr("Kind")});
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setToolTip(tr("Before → after for every tensor a quantizer sees: kurtosis (3 for a Gaussian; outliers make "
                           "it large), the peak over the RMS, and the SQNR of its fake quantization (higher is "
                           "better). Green: better after, red: worse."));
    auto* plots = new QSplitter(Qt::Vertical, split);
    m_histogram = new HistogramPlot(plots);
    m_histogram->setObjectName(QStringLiteral("whatIfHistogram"));
    m_histogram->setLogCount(true);
    m_layers = new BarChart(plots);
    m_layers->setObjectName(QStringLiteral("whatIfLayers"));
    m_layers->setTitle(tr("Layer output SQNR (W and A quantized), before and after"));
    m_layers->setValueLabel(tr("output SQNR (dB)"));
    m_layers->setHigherIsBetter(true);
    m_layers->setHighlightLabel(tr("better"));
    m_layers->setExportName(QStringLiteral("whatif-layer-sqnr"));
    plots->addWidget(m_histogram);
    plots->addWidget(m_layers);
    // The bars need room for their rotated layer names (MiniLM: 39 layers); the histogram's
    // size hint would otherwise take nearly all of the height.
    m_layers->setMinimumHeight(220);
    plots->setStretchFactor(0, 3);
    plots->setStretchFactor(1, 2);
    plots->setSizes({600, 400});
    split->addWidget(m_table);
    split->addWidget(plots);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 6);
    layout->addWidget(split, 1);

    connect(m_compute, &QPushButton::clicked, this, [this] { emit computeRequested(kvCache(), rotation(), samples()); });
    connect(m_runPtq, &QPushButton::clicked, this, [this] { emit runRequested(kvCache(), rotation(), QStringLiteral("ptq")); });
    connect(m_runQad, &QPushButton::clicked, this, [this] { emit runRequested(kvCache(), rotation(), QStringLiteral("qad")); });
    connect(m_table, &QTableWidget::currentCellChanged, this, [this](int row) { showTensor(row); });
    m_compute->setEnabled(false);
    m_runPtq->setEnabled(false);
    m_runQad->setEnabled(false);
    setKvCache(QStringLiteral("fp8"));
    setRotation(QStringLiteral("hadamard"));
}

void WhatIfView::setModel(const ModelSummary& summary) {
    const bool encoder = summary.config.architecture == "bert";
    m_hasKvCache = !encoder && (summary.config.architecture == "llama" || summary.config.architecture == "qwen2" ||
                                summary.config.architecture == "gpt2");
    m_model->setText(tr("%1 (%2)").arg(QString::fromStdString(summary.is_demo ? "demo" : summary.path),
                                        QString::fromStdString(summary.config.model_type)));
    m_kv->setEnabled(m_hasKvCache);
    if (!m_hasKvCache) {
        m_kv->setCurrentIndex(0);
        m_kv->setToolTip(tr("%1 keeps no KV cache (an encoder or a model without attention); rotations still apply.")
                             .arg(QString::fromStdString(summary.config.model_type)));
    }
    m_compute->setEnabled(true);
    m_runPtq->setEnabled(true);
    m_encoder = encoder;
    m_runQad->setEnabled(!encoder);
    m_runQad->setToolTip(encoder ? tr("QAD distils next-token distributions; an encoder has none.") : m_runPtq->toolTip());
}

void WhatIfView::setBusy(bool busy) {
    m_compute->setEnabled(!busy);
    m_runPtq->setEnabled(!busy);
    m_runQad->setEnabled(!busy && !m_encoder);
    if (busy) m_compute->setText(tr("Comparing…"));
    else m_compute->setText(tr("Compare"));
}

void WhatIfView::setMessage(const QString& text, bool isError) {
    m_message->setText(text);
    m_message->setStyleSheet(isError ? QStringLiteral("color: #b03030;") : QString());
    m_message->setVisible(!text.isEmpty());
}

QString WhatIfView::kvCache() const { return m_kv->currentData().toString(); }
QString WhatIfView::rotation() const { return m_rotation->currentData().toString(); }
int WhatIfView::samples() const { return m_samples->value(); }

bool WhatIfView::setKvCache(const QString& name) {
    const int i = m_kv->findData(name);
    if (i < 0) return false;
    m_kv->setCurrentIndex(i);
    return true;
}

bool WhatIfView::setRotation(const QString& name) {
    const int i = m_rotation->findData(name);
    if (i < 0) return false;
    m_rotation->setCurrentIndex(i);
    return true;
}

void WhatIfView::fillSummary() {
    const WhatIfReport& r = m_report;
    const bool kl = r.output_metric == "kl";
    const double rel = r.output_before > 0 ? (r.output_after - r.output_before) / r.output_before * 100.0 : 0.0;
    QString text = tr("<b>%1</b> on %2 held-out examples: %3 → <b>%4</b> (%5%6 %)")
                       .arg(kl ? tr("KL(FP ‖ quantized)") : tr("1 − cosine of the embeddings"))
                       .arg(r.eval_examples)
                       .arg(num(r.output_before), num(r.output_after))
                       .arg(rel >= 0 ? QStringLiteral("+") : QString())
                       .arg(QString::number(rel, 'f', 1));
    text += tr("&nbsp;&nbsp;·&nbsp;&nbsp;weights %1 → %2").arg(bytes(r.weight_bytes_before), bytes(r.weight_bytes_after));
    if (r.has_kv_cache)
        text += tr("&nbsp;&nbsp;·&nbsp;&nbsp;KV cache %1 → <b>%2</b> per token, %3 → <b>%4</b> per 8k context")
                    .arg(bytes(r.kv_memory_before.bytes_per_token), bytes(r.kv_memory_after.bytes_per_token),
                         bytes(r.kv_memory_before.bytes_8k()), bytes(r.kv_memory_after.bytes_8k()));
    else
        text += tr("&nbsp;&nbsp;·&nbsp;&nbsp;no KV cache (encoder)");
    text += tr("<br>KV cache: %1 → %2;&nbsp; rotation: %3 → %4&nbsp; (quick runs: RTN weights, max calibration)")
                .arg(QString::fromStdString(r.kv_cache_before).toHtmlEscaped(), QString::fromStdString(r.kv_cache_after).toHtmlEscaped(),
                     QString::fromStdString(r.rotation_before).toHtmlEscaped(), QString::fromStdString(r.rotation_after).toHtmlEscaped());
    m_summary->setText(text);
    QStringList notes;
    for (const std::string& n : r.rotation_notes) notes << QString::fromStdString(n);
    m_notes->setText(notes.join(QLatin1Char('\n')));
    m_notes->setVisible(!notes.isEmpty());
}

void WhatIfView::setReport(const WhatIfReport& report) {
    m_report = report;
    m_hasReport = true;
    setMessage(QString(), false);
    fillSummary();
    m_table->setRowCount(static_cast<int>(report.tensors.size()));
    for (int i = 0; i < static_cast<int>(report.tensors.size()); ++i) {
        const WhatIfTensor& t = report.tensors[static_cast<size_t>(i)];
        auto* name = new QTableWidgetItem(QString::fromStdString(t.name));
        name->setToolTip(QString::fromStdString(t.name));
        m_table->setItem(i, 0, name);
        auto* q = new QTableWidgetItem(QString::fromStdString(t.quantizer_after));
        q->setToolTip(tr("before: %1\nafter: %2").arg(QString::fromStdString(t.quantizer_before), QString::fromStdString(t.quantizer_after)));
        m_table->setItem(i, 1, q);
        m_table->setItem(i, 2, change(t.kurtosis_before, t.kurtosis_after, true));
        m_table->setItem(i, 3, change(t.max_over_rms_before, t.max_over_rms_after, true));
        m_table->setItem(i, 4, change(t.sqnr_before, t.sqnr_after, false));
        m_table->setItem(i, 5, new QTableWidgetItem(QString::fromStdString(t.kind)));
    }
    QStringList layers;
    QVector<QVector<double>> values(2);
    for (const WhatIfLayer& l : report.layers) {
        QString name = QString::fromStdString(l.layer);
        name.replace(QStringLiteral("model.layers."), QStringLiteral("L"));
        name.replace(QStringLiteral("transformer.h."), QStringLiteral("h"));
        name.replace(QStringLiteral("encoder.layer."), QStringLiteral("L"));
        layers << name;
        values[0] << l.sqnr_before;
        values[1] << l.sqnr_after;
    }
    m_layers->setGroupedBars(layers, {tr("before"), tr("after")}, values);
    if (!report.tensors.empty()) {
        // Start on the tensor the levers change most: the largest drop in kurtosis.
        int best = 0;
        double drop = -1e300;
        for (int i = 0; i < static_cast<int>(report.tensors.size()); ++i) {
            const WhatIfTensor& t = report.tensors[static_cast<size_t>(i)];
            const double d = t.kurtosis_before - t.kurtosis_after;
            if (d > drop) {
                drop = d;
                best = i;
            }
        }
        m_table->selectRow(best);
        showTensor(best);
    }
}

bool WhatIfView::selectTensor(const QString& tensor) {
    for (int i = 0; i < m_table->rowCount(); ++i)
        if (m_table->item(i, 0)->text() == tensor) {
            m_table->selectRow(i);
            showTensor(i);
            return true;
        }
    return false;
}

void WhatIfView::showTensor(int row) {
    if (row < 0 || row >= static_cast<int>(m_report.tensors.size())) return;
    const WhatIfTensor& t = m_report.tensors[static_cast<size_t>(row)];
    m_histogram->setTitle(tr("%1 — before (filled) and after (outline)").arg(QString::fromStdString(t.name)));
    m_histogram->setAxisLabel(t.kind == "activation" ? tr("input value") : t.kind == "key" ? tr("key value (after RoPE)")
                                                                                            : tr("value"));
    m_histogram->setExportName(QStringLiteral("whatif-") + QString::fromStdString(t.name));
    m_histogram->setHistogram(toPlot(t.histogram_before, tr("before (%1)").arg(QString::fromStdString(t.quantizer_before))));
    m_histogram->setOverlay(toPlot(t.histogram_after, tr("after (%1)").arg(QString::fromStdString(t.quantizer_after))));
    const std::vector<double>& grid = t.grid_after.empty() ? t.grid_before : t.grid_after;
    m_histogram->setGrid(grid, grid.empty() ? QString() : tr("grid of the %1 quantizer").arg(t.grid_after.empty() ? tr("before") : tr("after")));
    if (!grid.empty())
        m_histogram->setClipThresholds(grid.front(), grid.back());
    else
        m_histogram->clearClipThresholds();
    m_histogram->resetView();
}

}  // namespace ql
