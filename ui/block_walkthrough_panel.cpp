// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/block_walkthrough_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "plots/flow_layout.h"
#include "plots/number_line_plot.h"
#include "ui/element_code.h"
#include "ui/wrapping_label.h"

namespace ql {
namespace {

enum Column { ColInput, ColScaled, ColCode, ColBits, ColOutput, ColError, ColCount };

QFont monospace(const QFont& base) {
    QFont f(QStringLiteral("monospace"));
    f.setStyleHint(QFont::Monospace);
    f.setPointSizeF(base.pointSizeF());
    return f;
}

QTableWidgetItem* readOnlyItem(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

QString granularityTitle(const QString& g) {
    if (g == "tensor") return QObject::tr("per tensor");
    if (g == "group") return QObject::tr("per group");
    if (g == "channel") return QObject::tr("per channel");
    return g;
}

QString shortNumber(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (v == 0) return QStringLiteral("0");
    return QString::number(v, 'g', 4);
}

}  // namespace

BlockWalkthroughPanel::BlockWalkthroughPanel(QWidget* parent) : QWidget(parent) { buildUi(); }

void BlockWalkthroughPanel::buildUi() {
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(0, 0, 0, 0);
    root->setSpacing(6);

    // The controls in groups that wrap onto further rows when the panel is narrow (a 1280-pixel
    // window) instead of widening the whole window; a label stays with its control.
    auto* bar = new FlowLayout(nullptr, 10, 4);
    m_bar = bar;
    auto group = [&](std::initializer_list<QWidget*> widgets) { return bar->addGroup(this, widgets); };
    auto button = [&](const QString& text, const QString& name, const QString& tip) {
        auto* b = new QPushButton(text, this);
        b->setObjectName(name);
        b->setToolTip(tip);
        b->setAutoDefault(false);
        return b;
    };
    QPushButton* normal = button(tr("Random normal"), QStringLiteral("randomNormalButton"),
                                 tr("A new block of N(0, 1) values (Ctrl+R)"));
    QPushButton* outlier = button(tr("With outlier"), QStringLiteral("outlierButton"),
                                  tr("Normal values and one outlier of 10 to 20 sigma: it sets the block's scale"));
    QPushButton* tiny = button(tr("Tiny values"), QStringLiteral("tinyButton"),
                               tr("Values around 1e-3: compare with a fixed tensor amax to see underflow"));
    QPushButton* paste = button(tr("Paste"), QStringLiteral("pasteButton"),
                                tr("Use numbers from the clipboard (separated by spaces, commas or new lines)"));
    group({normal, outlier, tiny, paste});
    connect(normal, &QPushButton::clicked, this, [this] { generate(SampleKind::RandomNormal); });
    connect(outlier, &QPushButton::clicked, this, [this] { generate(SampleKind::WithOutlier); });
    connect(tiny, &QPushButton::clicked, this, [this] { generate(SampleKind::TinyValues); });
    connect(paste, &QPushButton::clicked, this, &BlockWalkthroughPanel::pasteValues);

    m_length = new QSpinBox(this);
    m_length->setObjectName(QStringLiteral("blockLength"));
    m_length->setRange(1, 256);
    m_length->setValue(16);
    m_length->setToolTip(tr("Number of values in the sample block (the format's block size by default)"));
    group({new QLabel(tr("Length"), this), m_length});

    m_granularityLabel = new QLabel(tr("Granularity"), this);
    m_granularity = new QComboBox(this);
    m_granularity->setObjectName(QStringLiteral("granularity"));
    m_granularity->setToolTip(tr("Which elements share a scale. For one block, per tensor uses the tensor amax below."));
    m_granularityGroup = group({m_granularityLabel, m_granularity});
    m_asymmetric = new QCheckBox(tr("Asymmetric"), this);
    m_asymmetric->setObjectName(QStringLiteral("asymmetric"));
    m_asymmetric->setToolTip(tr("Scale from min and max with a zero point (torchao ASYMMETRIC)"));
    bar->addWidget(m_asymmetric);
    m_doubleQuant = new QCheckBox(tr("Double quantization"), this);
    m_doubleQuant->setObjectName(QStringLiteral("doubleQuant"));
    m_doubleQuant->setToolTip(tr("QLoRA: store each absmax as 8 bits (bitsandbytes dynamic map)"));
    bar->addWidget(m_doubleQuant);
    m_mxRuleLabel = new QLabel(tr("Scale rule"), this);
    m_mxRule = new QComboBox(this);
    m_mxRule->setObjectName(QStringLiteral("mxScaleRule"));
    m_mxRule->addItem(tr("floor (OCP)"), QStringLiteral("floor"));
    m_mxRule->addItem(tr("rceil (no clipping)"), QStringLiteral("rceil"));
    m_mxRule->setToolTip(tr("floor: 2^(floor(log2 amax) − emax), the largest element can clip;\n"
                            "rceil: 2^ceil(log2(amax / max)), never clips (NVIDIA recipes)"));
    m_mxRuleGroup = group({m_mxRuleLabel, m_mxRule});
    m_autoAmax = new QCheckBox(tr("Tensor amax = block amax"), this);
    m_autoAmax->setObjectName(QStringLiteral("autoTensorAmax"));
    m_autoAmax->setChecked(true);
    m_autoAmax->setToolTip(tr("Unchecked: pretend the block sits in a tensor with this amax (sets the per-tensor scale)"));
    m_tensorAmax = new QDoubleSpinBox(this);
    m_tensorAmax->setObjectName(QStringLiteral("tensorAmax"));
    m_tensorAmax->setDecimals(4);
    m_tensorAmax->setRange(1e-4, 1e6);
    m_tensorAmax->setValue(8.0);
    m_tensorAmax->setEnabled(false);
    m_tensorAmaxGroup = group({m_autoAmax, m_tensorAmax});
    root->addLayout(bar);

    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("errorBanner"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->hide();
    root->addWidget(m_error);
    m_warning = new QLabel(this);
    m_warning->setObjectName(QStringLiteral("warningBanner"));
    m_warning->setWordWrap(true);
    m_warning->hide();
    root->addWidget(m_warning);

    m_splitter = new QSplitter(Qt::Horizontal, this);
    m_splitter->setChildrenCollapsible(false);
    m_values = new QTableWidget(0, ColCount, m_splitter);
    m_values->setObjectName(QStringLiteral("valuesTable"));
    m_values->setHorizontalHeaderLabels(
        {tr("Input x"), tr("x / scale"), tr("Code"), tr("Bits"), tr("Output x'"), tr("Error")});
    m_values->horizontalHeaderItem(ColInput)->setToolTip(tr("Double-click to edit"));
    m_values->horizontalHeaderItem(ColScaled)->setToolTip(tr("The input divided by the block's scale: the element domain before rounding"));
    m_values->horizontalHeaderItem(ColError)->setToolTip(tr("x' − x"));
    m_values->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_values->setSelectionMode(QAbstractItemView::SingleSelection);
    m_values->setAlternatingRowColors(true);
    m_values->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                              QAbstractItemView::AnyKeyPressed);
    m_values->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_values->horizontalHeader()->setStretchLastSection(true);
    m_values->horizontalHeader()->setMinimumSectionSize(30);
    m_values->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_values->setMinimumWidth(300);
    connect(m_values, &QTableWidget::cellChanged, this, &BlockWalkthroughPanel::onValueEdited);
    connect(m_values, &QTableWidget::currentCellChanged, this, [this](int row, int, int previousRow, int) {
        if (m_filling || row == previousRow) return;
        m_plot->setSelectedSample(row);
        // A super-block's search and grid follow the selected element's sub-block.
        const auto& sb = m_result.super_block;
        if (m_hasResult && sb.present && row >= 0 && sb.sub_block_length > 0 && row / sb.sub_block_length != m_searchSubBlock) {
            m_searchSubBlock = row / sb.sub_block_length;
            recompute();
            return;  // recompute re-emits elementSelected
        }
        Q_EMIT elementSelected(row);
    });

    auto* right = new QWidget(m_splitter);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->setSpacing(6);
    m_steps = new QTableWidget(0, 3, right);
    m_steps->setObjectName(QStringLiteral("stepsTable"));
    m_steps->setHorizontalHeaderLabels({tr("Step"), tr("Formula"), tr("Result")});
    m_steps->verticalHeader()->setVisible(false);
    m_steps->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_steps->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_steps->setWordWrap(true);
    m_steps->setAlternatingRowColors(true);
    m_steps->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_steps->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_steps->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    rightLayout->addWidget(m_steps, 3);

    // The super-block (GGUF K-quants, IQ4): sub-blocks on the left, the selected one's search on
    // the right.
    m_superBlock = new QWidget(right);
    m_superBlock->setObjectName(QStringLiteral("superBlockBox"));
    auto* superLayout = new QVBoxLayout(m_superBlock);
    superLayout->setContentsMargins(0, 0, 0, 0);
    superLayout->setSpacing(4);
    m_superSummary = new QLabel(m_superBlock);
    m_superSummary->setObjectName(QStringLiteral("superBlockSummary"));
    m_superSummary->setWordWrap(true);
    m_superSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    superLayout->addWidget(m_superSummary);
    auto* superTables = new QSplitter(Qt::Horizontal, m_superBlock);
    superTables->setChildrenCollapsible(false);
    m_subBlocks = new QTableWidget(0, 7, superTables);
    m_subBlocks->setObjectName(QStringLiteral("subBlocksTable"));
    m_subBlocks->setHorizontalHeaderLabels(
        {tr("Sub-block"), tr("Search scale"), tr("Search min"), tr("Stored"), tr("Scale"), tr("Min"), tr("MSE")});
    m_subBlocks->horizontalHeaderItem(1)->setToolTip(tr("What ggml's search found for the sub-block (float32)"));
    m_subBlocks->horizontalHeaderItem(3)->setToolTip(tr("The sub-block's stored scale (and min) integers"));
    m_subBlocks->horizontalHeaderItem(4)->setToolTip(tr("The decoded scale: super scale d × stored scale"));
    m_subBlocks->verticalHeader()->setVisible(false);
    m_subBlocks->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_subBlocks->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_subBlocks->setSelectionMode(QAbstractItemView::SingleSelection);
    m_subBlocks->setAlternatingRowColors(true);
    m_subBlocks->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_subBlocks->horizontalHeader()->setStretchLastSection(true);
    connect(m_subBlocks, &QTableWidget::currentCellChanged, this, [this](int row, int, int previousRow, int) {
        if (m_filling || row < 0 || row == previousRow) return;
        selectSubBlock(row);
    });
    auto* searchBox = new QWidget(superTables);
    auto* searchLayout = new QVBoxLayout(searchBox);
    searchLayout->setContentsMargins(0, 0, 0, 0);
    searchLayout->setSpacing(2);
    m_searchTitle = new QLabel(searchBox);
    m_searchTitle->setObjectName(QStringLiteral("searchTitle"));
    m_searchTitle->setWordWrap(true);
    searchLayout->addWidget(m_searchTitle);
    m_search = new QTableWidget(0, 6, searchBox);
    m_search->setObjectName(QStringLiteral("searchTable"));
    m_search->setHorizontalHeaderLabels({tr("Step"), tr("1 / scale"), tr("Scale"), tr("Min"), tr("Objective"), tr("Kept")});
    m_search->horizontalHeaderItem(5)->setToolTip(tr("✓: ggml kept this candidate as the best so far"));
    m_search->verticalHeader()->setVisible(false);
    m_search->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_search->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_search->setAlternatingRowColors(true);
    m_search->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_search->horizontalHeader()->setStretchLastSection(true);
    searchLayout->addWidget(m_search, 1);
    superTables->setStretchFactor(0, 1);
    superTables->setStretchFactor(1, 1);
    superLayout->addWidget(superTables, 1);
    m_superBlock->hide();
    rightLayout->addWidget(m_superBlock, 4);
    m_splitter->setStretchFactor(0, 2);
    m_splitter->setStretchFactor(1, 3);
    m_splitter->setSizes({520, 650});
    root->addWidget(m_splitter, 3);
    // The chart and its summary span the panel's width under both tables: the block's values
    // spread over the whole width, the summary fits on one line, and the tables and the chart
    // share the height instead of the chart taking it from the steps alone.
    m_plot = new NumberLinePlot(this);
    m_plot->setObjectName(QStringLiteral("blockPlot"));
    m_plot->setMinimumHeight(110);
    m_plot->setExportName(QStringLiteral("sample-block"));
    connect(m_plot, &NumberLinePlot::sampleClicked, this, [this](int index) { selectElement(index); });
    root->addWidget(m_plot, 2);
    m_metrics = new WrappingLabel(this);
    m_metrics->setObjectName(QStringLiteral("metrics"));
    m_metrics->setTextInteractionFlags(Qt::TextSelectableByMouse);
    root->addWidget(m_metrics);

    auto optionsEdited = [this] {
        m_tensorAmax->setEnabled(!m_autoAmax->isChecked());
        updateTensorAmaxVisibility();
        Q_EMIT optionsChanged(options());
        recompute();
    };
    connect(m_granularity, &QComboBox::currentIndexChanged, this, optionsEdited);
    connect(m_asymmetric, &QCheckBox::toggled, this, optionsEdited);
    connect(m_doubleQuant, &QCheckBox::toggled, this, optionsEdited);
    connect(m_mxRule, &QComboBox::currentIndexChanged, this, optionsEdited);
    connect(m_autoAmax, &QCheckBox::toggled, this, optionsEdited);
    connect(m_tensorAmax, &QDoubleSpinBox::valueChanged, this, optionsEdited);
    connect(m_length, &QSpinBox::valueChanged, this, [this](int length) {
        // Keep what the user typed; extend with the current generator.
        std::vector<float> next = makeSampleBlock(m_lastKind, length, m_seed);
        std::copy_n(m_block.begin(), std::min(m_block.size(), next.size()), next.begin());
        m_block = std::move(next);
        recompute();
    });
}

void BlockWalkthroughPanel::updateTensorAmaxVisibility() {
    // Only a per-tensor scale depends on values outside the block.
    const QString family = m_format ? QString::fromStdString(m_format->family) : QString();
    const bool tensorScale = family == "fp8" || family == "nvfp4" ||
                             (family == "int" && m_granularity->currentData().toString() == QLatin1String("tensor"));
    m_autoAmax->setVisible(tensorScale);
    m_tensorAmax->setVisible(tensorScale);
    m_tensorAmaxGroup->setVisible(tensorScale);
    if (m_bar) m_bar->invalidate();
}

int BlockWalkthroughPanel::defaultLength() const {
    if (!m_format) return 16;
    // Per-tensor formats get a short block; groups of 128 would make a long table to read.
    if (m_format->block_size > 0) return static_cast<int>(m_format->block_size);
    return m_format->family == "int" ? 32 : 16;
}

void BlockWalkthroughPanel::setFormat(const FormatInfo& format) {
    const int oldDefault = defaultLength();
    const bool lengthWasDefault = m_block.empty() || m_length->value() == oldDefault;
    m_format = &format;
    m_searchSubBlock = 0;
    {
        const QSignalBlocker b1(m_granularity), b2(m_asymmetric), b3(m_doubleQuant), b4(m_mxRule), b5(m_length);
        m_granularity->clear();
        // A sample block is one row: "channel" would give every element its own scale, so the
        // walkthrough offers per tensor (scale from the tensor amax) and per group (this block).
        for (const auto& g : format.granularities)
            if (g != "channel") m_granularity->addItem(granularityTitle(QString::fromStdString(g)), QString::fromStdString(g));
        // INT defaults to groups (the INT4 AWQ layout).
        const int group = m_granularity->findData(QStringLiteral("group"));
        m_granularity->setCurrentIndex(group >= 0 ? group : 0);
        const bool hasGranularity = m_granularity->count() > 1;
        m_granularityLabel->setVisible(hasGranularity);
        m_granularity->setVisible(hasGranularity);
        m_granularityGroup->setVisible(hasGranularity);
        m_asymmetric->setVisible(format.supports_asymmetric);
        m_doubleQuant->setVisible(format.supports_double_quant);
        m_mxRuleLabel->setVisible(format.supports_scale_rule);
        m_mxRule->setVisible(format.supports_scale_rule);
        m_mxRuleGroup->setVisible(format.supports_scale_rule);
        updateTensorAmaxVisibility();
        // One block at most: explain_block shows one block's scale.
        m_length->setMaximum(format.block_size > 0 ? static_cast<int>(format.block_size) : 256);
        if (lengthWasDefault) m_length->setValue(defaultLength());
    }
    // Hiding a widget that was never shown does not invalidate its layout: the cached minimum
    // would still count every option and widen the window.
    m_bar->invalidate();
    // A new format starts with no element selected: the bit layout shows the format's largest value.
    {
        const QSignalBlocker blocker(m_values);
        m_values->setCurrentCell(-1, -1);
    }
    if (lengthWasDefault || m_block.empty())
        m_block = makeSampleBlock(m_lastKind, m_length->value(), m_seed);
    m_plot->setExportName(QStringLiteral("sample-block-%1").arg(QString::fromStdString(format.name)));
    Q_EMIT optionsChanged(options());
    recompute();
}

void BlockWalkthroughPanel::setBlock(const std::vector<float>& values) {
    m_block = values;
    if (m_block.size() > static_cast<size_t>(m_length->maximum())) m_block.resize(static_cast<size_t>(m_length->maximum()));
    {
        const QSignalBlocker blocker(m_length);
        m_length->setValue(static_cast<int>(std::clamp<size_t>(values.size(), 1, static_cast<size_t>(m_length->maximum()))));
    }
    recompute();
}

void BlockWalkthroughPanel::generate(SampleKind kind) { generate(kind, m_seed + 1); }

void BlockWalkthroughPanel::selectSubBlock(int index) {
    if (index == m_searchSubBlock || index < 0) return;
    m_searchSubBlock = index;
    recompute();
}

void BlockWalkthroughPanel::fillSuperBlock() {
    const SuperBlockWalkthrough& sb = m_result.super_block;
    const bool show = m_hasResult && sb.present;
    m_superBlock->setVisible(show);
    if (!show) return;
    m_filling = true;
    const int subs = static_cast<int>(sb.sub_blocks.size());
    const int shownElements = static_cast<int>(m_block.size());
    const bool traced = !sb.search.empty();  // the i-quants' searches are described, not traced
    if (subs == 1) {
        m_superSummary->setText(tr("<b>Block</b> of %1: fp16 scale d = %2 (%3)")
                                    .arg(sb.sub_block_length)
                                    .arg(formatValue(sb.d))
                                    .arg(traced ? tr("the search's scale") : QString::fromStdString(sb.search_method).toHtmlEscaped()));
    } else {
        m_superSummary->setText(
            tr("<b>Super-block</b> of %1: %2 sub-blocks of %3 with %4-bit scales%5 under fp16 <b>d</b> = %6%7. "
               "Select a sub-block (or an element) to %8.")
                .arg(subs * sb.sub_block_length)
                .arg(subs)
                .arg(sb.sub_block_length)
                .arg(sb.scale_bits)
                .arg(sb.has_min ? tr(" and mins") : QString())
                .arg(formatValue(sb.d))
                .arg(sb.has_min ? tr(", <b>dmin</b> = %1").arg(formatValue(sb.dmin)) : QString())
                .arg(traced ? tr("step through its search") : tr("see its scale and grid")));
    }
    m_subBlocks->setRowCount(subs);
    for (int j = 0; j < subs; ++j) {
        const WalkthroughSubBlock& s = sb.sub_blocks[static_cast<size_t>(j)];
        const bool padding = s.first >= shownElements;
        m_subBlocks->setItem(j, 0, readOnlyItem(tr("%1  (%2–%3)").arg(j).arg(s.first).arg(s.first + s.length - 1)));
        m_subBlocks->setItem(j, 1, readOnlyItem(std::isnan(s.search_scale) ? QStringLiteral("—") : shortNumber(s.search_scale)));
        m_subBlocks->setItem(j, 2, readOnlyItem(sb.has_min ? shortNumber(s.search_min) : QStringLiteral("—")));
        m_subBlocks->setItem(j, 3, readOnlyItem(sb.has_min ? QStringLiteral("%1 / %2").arg(s.stored_scale).arg(s.stored_min)
                                                           : QString::number(s.stored_scale)));
        m_subBlocks->setItem(j, 4, readOnlyItem(shortNumber(s.scale)));
        m_subBlocks->setItem(j, 5, readOnlyItem(sb.has_min ? shortNumber(s.min) : QStringLiteral("—")));
        m_subBlocks->setItem(j, 6, readOnlyItem(padding ? tr("padding") : QString::number(s.mse, 'g', 3)));
        if (padding)
            for (int c = 0; c < m_subBlocks->columnCount(); ++c) m_subBlocks->item(j, c)->setForeground(palette().color(QPalette::PlaceholderText));
    }
    for (int c = 0; c < m_subBlocks->columnCount() - 1; ++c) m_subBlocks->resizeColumnToContents(c);
    {
        const QSignalBlocker blocker(m_subBlocks);
        m_subBlocks->setCurrentCell(sb.search_sub_block, 0);
    }
    m_searchTitle->setText((traced ? tr("<b>Search of sub-block %1</b>: %2<br>Objective: %3")
                                   : tr("<b>How ggml searches sub-block %1</b>: %2<br>Objective: %3 (not traced step by step)"))
                               .arg(sb.search_sub_block)
                               .arg(QString::fromStdString(sb.search_method).toHtmlEscaped())
                               .arg(QString::fromStdString(sb.search_objective).toHtmlEscaped()));
    m_search->setVisible(traced);
    m_search->setRowCount(static_cast<int>(sb.search.size()));
    int lastKept = -1;
    for (int i = 0; i < static_cast<int>(sb.search.size()); ++i)
        if (sb.search[static_cast<size_t>(i)].accepted) lastKept = i;
    for (int i = 0; i < static_cast<int>(sb.search.size()); ++i) {
        const WalkthroughSearchStep& c = sb.search[static_cast<size_t>(i)];
        m_search->setItem(i, 0, readOnlyItem(i == 0 ? tr("start") : QString::number(c.step)));
        m_search->setItem(i, 1, readOnlyItem(shortNumber(c.inverse_scale)));
        m_search->setItem(i, 2, readOnlyItem(shortNumber(c.scale)));
        m_search->setItem(i, 3, readOnlyItem(sb.has_min ? shortNumber(c.min) : QStringLiteral("—")));
        m_search->setItem(i, 4, readOnlyItem(std::isnan(c.objective) ? tr("not fitted") : QString::number(c.objective, 'g', 5)));
        m_search->setItem(i, 5, readOnlyItem(c.accepted ? QStringLiteral("✓") : QString()));
        if (i == lastKept) {
            QFont bold = font();
            bold.setBold(true);
            for (int col = 0; col < m_search->columnCount(); ++col) {
                m_search->item(i, col)->setFont(bold);
                m_search->item(i, col)->setToolTip(tr("The search's result"));
            }
        } else if (!c.accepted) {
            for (int col = 0; col < m_search->columnCount(); ++col) m_search->item(i, col)->setForeground(palette().color(QPalette::PlaceholderText));
        }
    }
    for (int c = 0; c < m_search->columnCount() - 1; ++c) m_search->resizeColumnToContents(c);
    m_filling = false;
}

void BlockWalkthroughPanel::generate(SampleKind kind, uint32_t seed) {
    m_lastKind = kind;
    m_seed = seed;
    m_block = makeSampleBlock(kind, m_length->value(), seed);
    recompute();
}

QuantOptions BlockWalkthroughPanel::options() const {
    QuantOptions o;
    if (!m_format) return o;
    o.format = m_format->name;
    if (m_granularity->count() > 0) o.granularity = m_granularity->currentData().toString().toStdString();
    // The sample block is one group.
    if (o.granularity == "group") o.group_size = static_cast<int64_t>(m_block.empty() ? m_length->value() : m_block.size());
    if (m_format->supports_asymmetric) o.asymmetric = m_asymmetric->isChecked();
    if (m_format->supports_double_quant) o.double_quant = m_doubleQuant->isChecked();
    if (m_format->supports_scale_rule) o.mx_scale = m_mxRule->currentData().toString().toStdString();
    return o;
}

float BlockWalkthroughPanel::tensorAmax() const {
    if (m_autoAmax->isHidden() || m_autoAmax->isChecked()) return std::numeric_limits<float>::quiet_NaN();
    return static_cast<float>(m_tensorAmax->value());
}

void BlockWalkthroughPanel::setTensorAmax(float amax) {
    if (std::isnan(amax)) {
        m_autoAmax->setChecked(true);
        return;
    }
    {
        const QSignalBlocker blocker(m_tensorAmax);
        m_tensorAmax->setValue(amax);
    }
    m_autoAmax->setChecked(false);
    m_tensorAmax->setEnabled(true);
    recompute();
}

QString BlockWalkthroughPanel::errorText() const { return m_error->isHidden() ? QString() : m_error->text(); }

int BlockWalkthroughPanel::selectedElement() const { return m_values->currentRow(); }

void BlockWalkthroughPanel::selectElement(int index) {
    if (index < 0 || index >= m_values->rowCount()) return;
    {
        const QSignalBlocker blocker(m_values);
        m_values->setCurrentCell(index, ColInput);
    }
    m_values->scrollToItem(m_values->item(index, ColInput));
    m_plot->setSelectedSample(index);
    const auto& sb = m_result.super_block;
    if (m_hasResult && sb.present && sb.sub_block_length > 0 && index / sb.sub_block_length != m_searchSubBlock) {
        m_searchSubBlock = index / sb.sub_block_length;
        recompute();  // emits elementSelected for the selected row
        return;
    }
    Q_EMIT elementSelected(index);
}

void BlockWalkthroughPanel::showError(const QString& message) {
    m_error->setText(message);
    m_error->setVisible(!message.isEmpty());
}

void BlockWalkthroughPanel::recompute() {
    if (!m_format) return;
    m_hasResult = false;
    m_result = BlockWalkthrough{};
    QString error;
    if (m_block.empty()) {
        error = tr("The block is empty: generate or paste some values.");
    } else {
        // A block is at most 256 values: explain_block takes microseconds, so it runs here
        // rather than on a worker thread (long jobs go through the Job API).
        try {
            m_result = explain_block(m_block, options(), tensorAmax(), m_searchSubBlock);
            m_hasResult = true;
        } catch (const UserError& e) {
            error = QString::fromStdString(e.what());
        } catch (const std::exception& e) {
            error = tr("Internal error while quantizing the block: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    showError(error);

    const bool nonFinite = std::any_of(m_block.begin(), m_block.end(), [](float v) { return !std::isfinite(v); });
    if (nonFinite) {
        m_warning->setText(m_format->family == "mx"
                               ? tr("The block contains NaN or Inf: MX stores the NaN scale (0xFF) and the whole block "
                                    "decodes to NaN.")
                               : tr("The block contains NaN or Inf: NaN stays NaN in its own element, the amax ignores "
                                    "NaN and Inf, and ±Inf saturates to ±max × scale."));
    }
    m_warning->setVisible(nonFinite);

    m_sqnrDb = 0;
    fillTables();
    fillSuperBlock();
    Q_EMIT walkthroughUpdated();
    // The selected element has a new code: let the bit layout follow.
    if (m_hasResult && selectedElement() >= 0) Q_EMIT elementSelected(selectedElement());
}

void BlockWalkthroughPanel::fillTables() {
    m_filling = true;
    const int previousRow = m_values->currentRow();
    const QSignalBlocker blocker(m_values);
    const int n = static_cast<int>(m_block.size());
    m_values->setRowCount(n);
    const QFont mono = monospace(font());
    const PlotStyle style = PlotStyle::fromPalette(palette(), font());
    const size_t outN = m_hasResult ? m_result.output.size() : 0;

    double maxError = 0, signal = 0, noise = 0;
    std::vector<bool> clipped(static_cast<size_t>(n), false);
    for (int i = 0; i < n && m_hasResult; ++i) {
        const size_t k = static_cast<size_t>(i);
        if (k >= outN) break;
        const double err = static_cast<double>(m_result.output[k]) - m_block[k];
        if (std::isfinite(err)) {
            maxError = std::max(maxError, std::fabs(err));
            signal += static_cast<double>(m_block[k]) * m_block[k];
            noise += err * err;
        }
        // Values outside the element range before rounding saturate to ±max: the cost of a
        // scale that does not cover the block (MX floor rule, a fixed tensor amax).
        if (!options().asymmetric && k < m_result.scaled.size() && !m_format->element_values.empty()) {
            const double s = m_result.scaled[k];
            const double lo = m_format->element_values.front(), hi = m_format->element_values.back();
            // LLM.int8()'s outlier columns are not clipped: they bypass the grid in full precision.
            const bool kept = k < m_result.kept.size() && m_result.kept[k];
            clipped[k] = !kept && (s > hi * (1 + 1e-6) + 1e-12 || s < lo * (1 + 1e-6) - 1e-12);
        }
    }

    for (int i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        auto* input = new QTableWidgetItem(formatValue(m_block[k]));
        input->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        input->setToolTip(tr("Double-click to edit"));
        m_values->setItem(i, ColInput, input);
        const bool have = m_hasResult && k < outN;
        auto* scaled = readOnlyItem(have && k < m_result.scaled.size() ? shortNumber(m_result.scaled[k]) : QString());
        if (clipped[k]) {
            scaled->setForeground(style.warning);
            scaled->setToolTip(tr("Outside the element range: clipped to the largest value"));
        } else if (k < m_result.kept.size() && m_result.kept[k]) {
            scaled->setToolTip(tr("An outlier column: kept in full precision, not quantized (code 0)"));
        }
        m_values->setItem(i, ColScaled, scaled);
        m_values->setItem(i, ColCode, readOnlyItem(have && k < m_result.codes.size() ? codeText(m_result.codes[k]) : QString()));
        auto* bits = readOnlyItem(have && k < m_result.code_bits.size() ? QString::fromStdString(m_result.code_bits[k]) : QString());
        bits->setFont(mono);
        bits->setTextAlignment(Qt::AlignCenter);
        m_values->setItem(i, ColBits, bits);
        auto* output = readOnlyItem(have ? QString::number(m_result.output[k], 'g', 6) : QString());
        if (have) output->setToolTip(tr("exactly %1").arg(formatValue(m_result.output[k])));
        m_values->setItem(i, ColOutput, output);
        auto* error = readOnlyItem(QString());
        if (have) {
            const double err = static_cast<double>(m_result.output[k]) - m_block[k];
            error->setText(err == 0 ? QStringLiteral("0") : QString::number(err, 'g', 3));
            if (maxError > 0 && std::isfinite(err)) {
                QColor c = style.warning;
                c.setAlphaF(0.06 + 0.34 * std::fabs(err) / maxError);
                error->setBackground(c);
            }
        }
        m_values->setItem(i, ColError, error);
    }
    QStringList rowLabels;
    for (int i = 0; i < n; ++i) rowLabels << QString::number(i);  // 0-based, like the code and the steps
    m_values->setVerticalHeaderLabels(rowLabels);
    // The last column (error) stretches into what is left, so nothing hides behind a scroll bar.
    for (int c = 0; c < ColError; ++c) {
        m_values->resizeColumnToContents(c);
        m_values->setColumnWidth(c, std::max(m_values->columnWidth(c) + 4, c == ColCode ? 40 : 56));
    }
    if (previousRow >= 0 && previousRow < n) m_values->setCurrentCell(previousRow, ColInput);

    m_steps->setRowCount(m_hasResult ? static_cast<int>(m_result.steps.size()) : 0);
    for (int i = 0; m_hasResult && i < static_cast<int>(m_result.steps.size()); ++i) {
        const auto& step = m_result.steps[static_cast<size_t>(i)];
        auto* label = new QTableWidgetItem(QString::fromStdString(step.label));
        QFont bold = font();
        bold.setBold(true);
        label->setFont(bold);
        m_steps->setItem(i, 0, label);
        auto* formula = new QTableWidgetItem(QString::fromStdString(step.formula));
        formula->setFont(mono);
        formula->setToolTip(formula->text());
        m_steps->setItem(i, 1, formula);
        auto* result = new QTableWidgetItem(QString::fromStdString(step.result));
        result->setFont(mono);
        result->setToolTip(result->text());
        m_steps->setItem(i, 2, result);
    }
    m_steps->resizeRowsToContents();

    if (m_hasResult) {
        std::vector<double> grid(m_result.grid.begin(), m_result.grid.end());
        std::sort(grid.begin(), grid.end());
        grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
        std::vector<double> in(m_block.begin(), m_block.end());
        std::vector<double> out(m_result.output.begin(), m_result.output.end());
        m_plot->setGrid(grid, {}, {tr("grid × scale")});
        m_plot->setSamples(in, out, clipped, tr("clipped"));
        QVector<QPair<double, QString>> markers;
        if (!grid.empty()) {
            markers.push_back({grid.back(), tr("max %1").arg(shortNumber(grid.back()))});
            if (grid.front() < 0) markers.push_back({grid.front(), tr("min %1").arg(shortNumber(grid.front()))});
        }
        m_plot->setMarkers(markers);
        const std::string& gridName = m_format->element.is_codebook ? m_format->title : m_format->element.name;
        if (m_result.super_block.present && m_result.super_block.sub_blocks.size() > 1) {
            const auto& sel = m_result.super_block.sub_blocks[static_cast<size_t>(m_result.super_block.search_sub_block)];
            m_plot->setTitle(m_result.super_block.has_min
                                 ? tr("Sub-block %1: %2 grid × %3 − %4").arg(m_result.super_block.search_sub_block)
                                       .arg(QString::fromStdString(gridName), shortNumber(sel.scale), shortNumber(sel.min))
                                 : tr("Sub-block %1: %2 grid × %3").arg(m_result.super_block.search_sub_block)
                                       .arg(QString::fromStdString(gridName), shortNumber(sel.scale)));
        } else {
            m_plot->setTitle(tr("This block: %1 grid × %2").arg(QString::fromStdString(gridName), shortNumber(m_result.scale)));
        }
        m_plot->setSampleToolTip([this](int i) {
            const size_t k = static_cast<size_t>(i);
            if (k >= m_result.output.size()) return QString();
            return tr("#%1: %2 → %3  (code %4)")
                .arg(i)
                .arg(formatValue(m_block[k]), formatValue(m_result.output[k]),
                     k < m_result.code_bits.size() ? QString::fromStdString(m_result.code_bits[k]) : QString());
        });
        if (previousRow >= 0 && previousRow < n) m_plot->setSelectedSample(previousRow);

        m_sqnrDb = noise > 0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
        QString metrics = tr("<b>MSE</b> %1 &nbsp;·&nbsp; <b>SQNR</b> %2 &nbsp;·&nbsp; <b>max |error|</b> %3 &nbsp;·&nbsp; <b>scale</b> %4")
                              .arg(QString::number(m_result.mse, 'g', 4),
                                   std::isinf(m_sqnrDb) ? tr("∞ (exact)") : tr("%1 dB").arg(m_sqnrDb, 0, 'f', 1),
                                   QString::number(maxError, 'g', 3), QString::number(m_result.scale, 'g', 6));
        if (m_result.global_scale != 0)
            metrics += tr(" &nbsp;·&nbsp; <b>tensor scale</b> %1").arg(QString::number(m_result.global_scale, 'g', 6));
        const auto clippedCount = std::count(clipped.begin(), clipped.end(), true);
        if (clippedCount > 0)
            metrics += tr(" &nbsp;·&nbsp; <span style='color:%1'><b>%2 clipped</b></span>").arg(style.warning.name()).arg(clippedCount);
        m_metrics->setText(metrics);
    } else {
        m_plot->setSamples({}, {});
        m_plot->setGrid({});
        m_plot->setMarkers({});
        m_plot->setTitle(QString());
        m_metrics->setText(QString());
    }
    m_filling = false;
}

QString BlockWalkthroughPanel::codeText(unsigned code) const {
    // Signed integer codes are two's complement bytes: show the integer they stand for.
    const ElementLayout& e = m_format->element;
    const bool signedInteger = e.is_integer && e.sign_bits > 0 && !options().asymmetric;
    if (signedInteger && m_format->element_bits <= 8) {
        const int bits = m_format->element_bits;
        int v = static_cast<int>(code & ((1u << bits) - 1u));
        if (v >= (1 << (bits - 1))) v -= 1 << bits;
        return QString::number(v);
    }
    return QString::number(code);
}

void BlockWalkthroughPanel::onValueEdited(int row, int column) {
    if (m_filling || column != ColInput || row < 0 || row >= static_cast<int>(m_block.size())) return;
    QTableWidgetItem* item = m_values->item(row, column);
    bool ok = false;
    const float v = item ? item->text().trimmed().toFloat(&ok) : 0.0f;
    if (!ok) {
        const QSignalBlocker blocker(m_values);
        item->setBackground(PlotStyle::fromPalette(palette(), font()).warning.lighter(170));
        showError(tr("Row %1: '%2' is not a number. Type a value such as 0.75, -3e-2, nan or inf.").arg(row).arg(item ? item->text() : QString()));
        return;
    }
    m_block[static_cast<size_t>(row)] = v;
    recompute();
}

void BlockWalkthroughPanel::pasteValues() {
    QString error;
    const std::vector<float> values = parseSampleValues(QApplication::clipboard()->text(), &error);
    if (values.empty()) {
        showError(tr("Paste: %1. Copy numbers separated by spaces, commas or new lines.").arg(error));
        return;
    }
    if (static_cast<int>(values.size()) > m_length->maximum()) {
        showError(tr("Paste: %1 values, but a sample block of %2 holds at most %3.")
                      .arg(values.size())
                      .arg(m_format ? QString::fromStdString(m_format->title) : QString())
                      .arg(m_length->maximum()));
        return;
    }
    setBlock(values);
}

}  // namespace ql
