// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/format_explorer_view.h"

#include <QAction>
#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "plots/flow_layout.h"
#include "plots/number_line_plot.h"
#include "plots/plot_export.h"
#include "plots/symlog_ticker.h"
#include "ui/bit_layout_widget.h"
#include "ui/block_structure_widget.h"
#include "ui/block_walkthrough_panel.h"
#include "ui/element_code.h"
#include "ui/format_picker.h"
#include "ui/wrapping_label.h"

namespace ql {
namespace {

// A titled panel; `extra` (optional) sits at the right of the title row.
QFrame* makeCard(const QString& title, QWidget* content, QWidget* extra = nullptr, QWidget* below = nullptr) {
    auto* card = new QFrame;
    card->setObjectName(QStringLiteral("card"));
    auto* layout = new QVBoxLayout(card);
    layout->setContentsMargins(10, 6, 10, 6);
    layout->setSpacing(4);
    auto* header = new QHBoxLayout;
    auto* label = new QLabel(title, card);
    label->setObjectName(QStringLiteral("sectionTitle"));
    header->addWidget(label);
    // The extra gets the rest of the row (a wrapping label in it wraps only when it must).
    if (extra)
        header->addWidget(extra, 1);
    else
        header->addStretch(1);
    layout->addLayout(header);
    layout->addWidget(content, 1);
    if (below) layout->addWidget(below);
    return card;
}

QString htmlEscape(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

bool isSubnormal(const FormatInfo& f, double v) {
    return f.element.is_float && v != 0 && std::fabs(v) < std::ldexp(1.0, 1 - f.element.bias);
}

QString binades(double ratio) { return QString::number(std::log2(ratio), 'f', 1); }

// "2⁻⁹ = 0.001953125" for small powers of two, which is how format specs state them.
QString powerOfTwoText(double v) {
    int e = 0;
    if (v > 0 && std::frexp(v, &e) == 0.5 && e - 1 < -3)
        return QStringLiteral("%1 = %2").arg(formatPowerOfTwo(e - 1, false), formatValue(v));
    return formatValue(v);
}

}  // namespace

FormatExplorerView::FormatExplorerView(QWidget* parent) : QWidget(parent) {
    buildUi();
    createActions();
    const QStringList names = m_picker->formatNames();
    selectFormat(names.contains(QStringLiteral("nvfp4")) ? QStringLiteral("nvfp4") : names.value(0));
}

void FormatExplorerView::buildUi() {
    auto* root = new QHBoxLayout(this);
    root->setContentsMargins(0, 0, 0, 0);
    m_outerSplitter = new QSplitter(Qt::Horizontal, this);
    m_outerSplitter->setObjectName(QStringLiteral("explorerOuterSplitter"));
    m_outerSplitter->setChildrenCollapsible(false);
    root->addWidget(m_outerSplitter);

    // Left: the format list, then where the numerics come from and what to watch for.
    auto* left = new QWidget(m_outerSplitter);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(10, 10, 4, 10);
    leftLayout->setSpacing(8);
    m_picker = new FormatPicker(left);
    leftLayout->addWidget(m_picker, 3);
    m_notes = new QLabel(left);
    m_notes->setObjectName(QStringLiteral("formatNotes"));
    m_notes->setWordWrap(true);
    m_notes->setTextFormat(Qt::RichText);
    m_notes->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_notes->setContentsMargins(2, 0, 6, 0);
    auto* notesScroll = new QScrollArea(left);
    notesScroll->setWidget(m_notes);
    notesScroll->setWidgetResizable(true);
    notesScroll->setFrameShape(QFrame::NoFrame);
    notesScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    notesScroll->viewport()->setBackgroundRole(QPalette::Base);  // the card's colour, not the window's
    leftLayout->addWidget(makeCard(tr("About this format"), notesScroll), 2);
    left->setMinimumWidth(210);

    // Right: header, then anatomy (bits, blocks), the number line and the sample block.
    auto* right = new QWidget(m_outerSplitter);
    auto* rightLayout = new QVBoxLayout(right);
    // Tight vertical spacing: at 1600x1000 the anatomy, the number line and the sample block
    // share about 640 pixels and must all fit at their minimum heights.
    rightLayout->setContentsMargins(6, 8, 10, 8);
    rightLayout->setSpacing(6);

    auto* headerRow = new QHBoxLayout;
    headerRow->setSpacing(12);
    m_title = new QLabel(right);
    m_title->setObjectName(QStringLiteral("formatTitle"));
    headerRow->addWidget(m_title);
    m_chips = new QWidget(right);
    // The chips wrap onto a second row in a narrow window rather than widening the view.
    auto* chipsLayout = new FlowLayout(m_chips, 6, 4);
    chipsLayout->setContentsMargins(0, 0, 0, 0);
    headerRow->addWidget(m_chips);
    headerRow->addStretch(1);
    rightLayout->addLayout(headerRow);
    // Wrapping labels: the splitters around this column ask for minimum heights only, and a
    // plain word-wrapped QLabel's minimum is its height at some other width.
    m_summary = new WrappingLabel(right);
    m_summary->setObjectName(QStringLiteral("formatSummary"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    rightLayout->addWidget(m_summary);
    m_scaleRule = new WrappingLabel(right);
    m_scaleRule->setObjectName(QStringLiteral("scaleRule"));
    m_scaleRule->setTextInteractionFlags(Qt::TextSelectableByMouse);
    rightLayout->addWidget(m_scaleRule);
    m_error = new WrappingLabel(right);
    m_error->setObjectName(QStringLiteral("errorBanner"));
    m_error->hide();
    rightLayout->addWidget(m_error);

    m_mainSplitter = new QSplitter(Qt::Vertical, right);
    m_mainSplitter->setObjectName(QStringLiteral("explorerMainSplitter"));
    m_mainSplitter->setChildrenCollapsible(false);
    rightLayout->addWidget(m_mainSplitter, 1);

    m_anatomySplitter = new QSplitter(Qt::Horizontal, m_mainSplitter);
    m_anatomySplitter->setChildrenCollapsible(false);
    m_bitLayout = new BitLayoutWidget;
    m_bitLayout->setObjectName(QStringLiteral("bitLayout"));
    // Wraps beside the scale menu when the window is narrow rather than widening it.
    m_valueFacts = new WrappingLabel;
    m_valueFacts->setObjectName(QStringLiteral("muted"));
    m_valueFacts->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_valueFacts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_anatomySplitter->addWidget(makeCard(tr("Bit layout of one element"), m_bitLayout));
    m_blockStructure = new BlockStructureWidget;
    m_blockStructure->setObjectName(QStringLiteral("blockStructure"));
    m_anatomySplitter->addWidget(makeCard(tr("Blocks and scales"), m_blockStructure));
    m_anatomySplitter->setStretchFactor(0, 1);
    m_anatomySplitter->setStretchFactor(1, 1);

    m_numberLine = new NumberLinePlot;
    m_numberLine->setObjectName(QStringLiteral("numberLine"));
    m_numberLine->setMinimumHeight(100);
    m_numberLine->setAxisLabel(tr("element value (before scaling) — drag to pan, wheel to zoom, double-click to reset, right-click to export"));
    m_scaleCombo = new QComboBox;
    m_scaleCombo->setObjectName(QStringLiteral("scaleMode"));
    m_scaleCombo->addItem(tr("Auto scale"), static_cast<int>(ScaleMode::Auto));
    m_scaleCombo->addItem(tr("Linear"), static_cast<int>(ScaleMode::Linear));
    m_scaleCombo->addItem(tr("Symmetric log"), static_cast<int>(ScaleMode::SymLog));
    m_scaleCombo->setToolTip(tr("Symmetric log shows subnormals and the top binade together (Ctrl+L)"));
    // The facts about the values sit in the title row of their plot.
    auto* numberLineExtras = new QWidget;
    auto* extrasLayout = new QHBoxLayout(numberLineExtras);
    extrasLayout->setContentsMargins(0, 0, 0, 0);
    extrasLayout->setSpacing(12);
    extrasLayout->addWidget(m_valueFacts, 1);
    extrasLayout->addWidget(m_scaleCombo);
    m_mainSplitter->addWidget(makeCard(tr("Every representable value"), m_numberLine, numberLineExtras));

    m_walkthrough = new BlockWalkthroughPanel;
    m_walkthrough->setObjectName(QStringLiteral("walkthrough"));
    m_mainSplitter->addWidget(makeCard(tr("A sample block, quantized step by step"), m_walkthrough));
    m_mainSplitter->setStretchFactor(0, 0);
    m_mainSplitter->setStretchFactor(1, 1);
    m_mainSplitter->setStretchFactor(2, 3);
    m_mainSplitter->setSizes({222, 180, 520});
    m_outerSplitter->setStretchFactor(0, 0);
    m_outerSplitter->setStretchFactor(1, 1);
    m_outerSplitter->setSizes({250, 1200});

    connect(m_picker, &FormatPicker::formatSelected, this, &FormatExplorerView::showFormat);
    connect(m_scaleCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
        setScaleMode(static_cast<ScaleMode>(m_scaleCombo->itemData(i).toInt()));
    });
    connect(m_numberLine, &NumberLinePlot::scaleChanged, this, [this](NumberLinePlot::Scale s) {
        // The plot's own context menu picked a scale: that becomes the explicit mode.
        if (!m_applyingScale) setScaleMode(s == NumberLinePlot::Scale::SymLog ? ScaleMode::SymLog : ScaleMode::Linear);
    });
    connect(m_numberLine, &NumberLinePlot::gridPointClicked, this, &FormatExplorerView::showGridValue);
    connect(m_walkthrough, &BlockWalkthroughPanel::elementSelected, this, &FormatExplorerView::showSampleElement);
    connect(m_walkthrough, &BlockWalkthroughPanel::optionsChanged, this, [this](const QuantOptions& options) {
        if (m_format) m_blockStructure->setStructure(*m_format, options);
    });
}

void FormatExplorerView::createActions() {
    auto add = [this](const QString& text, const QKeySequence& key, auto slot) {
        auto* a = new QAction(text, this);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WindowShortcut);
        connect(a, &QAction::triggered, this, slot);
        addAction(a);
        m_actions << a;
        return a;
    };
    add(tr("Find Format…"), QKeySequence::Find, [this] { m_picker->focusFilter(); });
    add(tr("Next Format"), QKeySequence(Qt::CTRL | Qt::Key_PageDown), [this] { m_picker->step(+1); });
    add(tr("Previous Format"), QKeySequence(Qt::CTRL | Qt::Key_PageUp), [this] { m_picker->step(-1); });
    m_actions << nullptr;  // separator
    add(tr("New Random Normal Block"), QKeySequence(Qt::CTRL | Qt::Key_R),
        [this] { m_walkthrough->generate(SampleKind::RandomNormal); });
    add(tr("New Block with Outlier"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O),
        [this] { m_walkthrough->generate(SampleKind::WithOutlier); });
    add(tr("New Block of Tiny Values"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I),
        [this] { m_walkthrough->generate(SampleKind::TinyValues); });
    m_actions << nullptr;
    m_logAction = add(tr("Symmetric Log Number Line"), QKeySequence(Qt::CTRL | Qt::Key_L), [this](bool on) {
        setScaleMode(on ? ScaleMode::SymLog : ScaleMode::Linear);
    });
    m_logAction->setCheckable(true);
    add(tr("Export Number Line…"), QKeySequence(Qt::CTRL | Qt::Key_E), [this] {
        savePlotInteractively(m_numberLine, QStringLiteral("number-line-%1").arg(currentFormat()));
    });
}

bool FormatExplorerView::selectFormat(const QString& name) { return m_picker->selectFormat(name); }

QString FormatExplorerView::currentFormat() const { return m_format ? QString::fromStdString(m_format->name) : QString(); }

QString FormatExplorerView::errorText() const { return m_error->isHidden() ? QString() : m_error->text(); }

void FormatExplorerView::showFormat(const QString& name) {
    const FormatInfo* info = nullptr;
    try {
        info = &format_info(name.toStdString());
    } catch (const std::exception& e) {
        m_error->setText(QString::fromUtf8(e.what()));
        m_error->show();
        return;
    }
    m_error->hide();
    m_format = info;
    const FormatInfo& f = *info;

    m_title->setText(QString::fromStdString(f.title));
    m_summary->setText(QString::fromStdString(f.summary));
    m_scaleRule->setText(f.scale_rule == "none" ? tr("No scale: values pass through.")
                                                : tr("Scale rule:  ") + QString::fromStdString(f.scale_rule));

    // Chips: the facts an expert scans for first.
    QLayout* chips = m_chips->layout();
    while (QLayoutItem* item = chips->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    auto chip = [&](const QString& text, const QString& tip) {
        auto* label = new QLabel(text, m_chips);
        label->setProperty("chip", true);
        label->setToolTip(tip);
        chips->addWidget(label);
    };
    chip(tr("%1 · %2 bit").arg(QString::fromStdString(f.element.name)).arg(f.element_bits), tr("Element type and width"));
    if (f.block_size > 0) chip(tr("block %1").arg(f.block_size), tr("Elements sharing one scale"));
    if (!f.scale_type.empty()) chip(QString::fromStdString(f.scale_type), tr("Scale type and granularity"));
    chip(tr("%1 bits/element").arg(f.bits_per_element, 0, 'g', 4), tr("Storage per element including scales (default settings)"));

    // Left column: source and notes.
    QString notes = tr("<p><b>Numerics follow</b><br>%1</p>").arg(htmlEscape(f.source));
    if (!f.notes.empty()) {
        notes += tr("<p><b>Notes</b></p><ul style='margin-left:-20px'>");
        for (const auto& n : f.notes) notes += QStringLiteral("<li style='margin-bottom:6px'>%1</li>").arg(htmlEscape(n));
        notes += QStringLiteral("</ul>");
    }
    notes += tr("<p><b>CLI name</b><br><code>%1</code></p>").arg(htmlEscape(f.name));
    m_notes->setText(notes);

    // Bit layout, with the largest value decoded as a first example.
    m_bitLayout->setFormat(f);
    const auto& values = f.element_values;
    if (!values.empty()) {
        m_bitLayout->setCode(encodeElementValue(f, values.back()), tr("the largest value"));
    } else if (f.element.is_float) {
        // Pass-through floats list no values: their largest finite code is 0 11…10 11…1.
        const QString bits = QStringLiteral("0") + QString(f.element.exponent_bits - 1, QLatin1Char('1')) + QLatin1Char('0') +
                             QString(f.element.mantissa_bits, QLatin1Char('1'));
        const ElementCode code = decodeElementBits(f, bits);
        if (code.valid) m_bitLayout->setCode(code, tr("the largest finite value"));
    }
    QStringList facts;
    const double codes = std::ldexp(1.0, f.element_bits);
    if (!values.empty()) {
        facts << tr("%1 codes → %2 finite values").arg(codes, 0, 'f', 0).arg(values.size());
        double minPositive = 0;
        for (float v : values)
            if (v > 0) {
                minPositive = v;
                break;
            }
        facts << tr("max %1").arg(formatValue(values.back()));
        if (f.element.is_float && f.element.exponent_bits > 0) {
            facts << tr("min normal %1").arg(powerOfTwoText(std::ldexp(1.0, 1 - f.element.bias)));
            if (minPositive > 0 && isSubnormal(f, minPositive)) facts << tr("min subnormal %1").arg(powerOfTwoText(minPositive));
            if (minPositive > 0) facts << tr("%1 binades").arg(binades(values.back() / minPositive));
        } else if (f.element.is_codebook) {
            facts << tr("min |value| %1").arg(formatValue(minPositive));
        } else if (f.element.is_integer && f.element.sign_bits > 0 &&
                   values.size() + 1 == static_cast<size_t>(codes)) {
            facts << tr("code %1 unused (symmetric range)").arg(QStringLiteral("1") + QString(f.element_bits - 1, QLatin1Char('0')));
        }
    } else {
        facts << tr("%1 codes; no quantization grid — every value of the type is kept").arg(codes, 0, 'f', 0);
    }
    m_valueFacts->setText(facts.join(QStringLiteral("  ·  ")));

    // Number line of every element value.
    std::vector<double> grid(values.begin(), values.end());
    std::vector<int> categories(grid.size(), 0);
    QStringList categoryNames;
    if (f.element.is_float) {
        bool anySubnormal = false;
        for (size_t i = 0; i < grid.size(); ++i) {
            categories[i] = isSubnormal(f, grid[i]) || grid[i] == 0 ? 1 : 0;
            anySubnormal = anySubnormal || isSubnormal(f, grid[i]);
        }
        categoryNames = {tr("normal"), anySubnormal ? tr("subnormal and zero") : tr("zero")};
    } else if (f.element.is_codebook) {
        categoryNames = {tr("codebook value")};
    } else {
        categoryNames = {tr("integer level")};
    }
    m_numberLine->setGrid(grid, categories, categoryNames);
    QVector<QPair<double, QString>> markers;
    if (!grid.empty()) {
        markers.push_back({grid.back(), tr("max %1").arg(formatValue(grid.back()))});
        if (grid.front() < 0) markers.push_back({grid.front(), formatValue(grid.front())});
    }
    m_numberLine->setMarkers(markers);
    QString what = tr("%1 element values").arg(QString::fromStdString(f.element.name));
    if (f.element.is_codebook) what = tr("%1 codebook values").arg(QString::fromStdString(f.title));
    else if (f.element.is_integer) what = tr("%1 levels").arg(QString::fromStdString(f.element.name));
    m_numberLine->setTitle(grid.empty() ? tr("%1 keeps every value: nothing to plot").arg(QString::fromStdString(f.title))
                                        : tr("%1 (%2)").arg(what).arg(grid.size()));
    m_numberLine->setExportName(QStringLiteral("number-line-%1").arg(QString::fromStdString(f.name)));
    m_numberLine->setGridToolTip([this](int i) {
        if (!m_format || i < 0 || i >= static_cast<int>(m_format->element_values.size())) return QString();
        const double v = m_format->element_values[static_cast<size_t>(i)];
        const ElementCode code = encodeElementValue(*m_format, v);
        return tr("%1  =  %2\n%3\nclick to decode").arg(formatValue(v), code.valid ? code.bits : QStringLiteral("?"), code.result);
    });
    applyScaleMode();
    if (!grid.empty()) m_numberLine->setSelectedGridIndex(static_cast<int>(grid.size()) - 1);

    m_walkthrough->setFormat(f);  // emits optionsChanged → block structure
    m_blockStructure->setStructure(f, m_walkthrough->options());
    Q_EMIT formatChanged(name);
}

void FormatExplorerView::setScaleMode(ScaleMode mode) {
    m_scaleMode = mode;
    {
        const QSignalBlocker blocker(m_scaleCombo);
        m_scaleCombo->setCurrentIndex(m_scaleCombo->findData(static_cast<int>(mode)));
    }
    applyScaleMode();
}

void FormatExplorerView::applyScaleMode() {
    NumberLinePlot::Scale scale = m_scaleMode == ScaleMode::SymLog ? NumberLinePlot::Scale::SymLog : NumberLinePlot::Scale::Linear;
    if (m_scaleMode == ScaleMode::Auto && m_format) {
        double minPositive = 0;
        for (float v : m_format->element_values)
            if (v > 0) {
                minPositive = v;
                break;
            }
        // Beyond ~10 binades a linear axis squeezes the small values into one stroke.
        if (minPositive > 0 && m_format->element_values.back() / minPositive > 1024) scale = NumberLinePlot::Scale::SymLog;
    }
    m_applyingScale = true;  // the plot's scaleChanged must not turn Auto into an explicit mode
    m_numberLine->setScale(scale);
    m_applyingScale = false;
    if (m_logAction) {
        const QSignalBlocker blocker(m_logAction);
        m_logAction->setChecked(scale == NumberLinePlot::Scale::SymLog);
    }
}

void FormatExplorerView::showGridValue(int index) {
    if (!m_format || index < 0 || index >= static_cast<int>(m_format->element_values.size())) return;
    m_numberLine->setSelectedGridIndex(index);
    m_bitLayout->setCode(encodeElementValue(*m_format, m_format->element_values[static_cast<size_t>(index)]),
                         tr("value %1 of %2").arg(index + 1).arg(m_format->element_values.size()));
}

void FormatExplorerView::showSampleElement(int index) {
    if (!m_format || !m_walkthrough->hasResult()) return;
    const BlockWalkthrough& r = m_walkthrough->result();
    if (index < 0 || static_cast<size_t>(index) >= r.code_bits.size() || static_cast<size_t>(index) >= r.output.size()) return;
    const QString bits = QString::fromStdString(r.code_bits[static_cast<size_t>(index)]);
    const QString context = tr("sample #%1: x = %2 → x' = %3")
                                .arg(index)
                                .arg(formatValue(m_walkthrough->block()[static_cast<size_t>(index)]),
                                     formatValue(r.output[static_cast<size_t>(index)]));
    if (m_walkthrough->options().asymmetric) {
        // Asymmetric codes are unsigned with a zero point; the two's-complement reading would lie.
        ElementCode code;
        code.valid = true;
        code.bits = bits;
        for (int i = 0; i < elementFields(*m_format).size(); ++i) code.fields.push_back({QString(), tr("(unsigned code)")});
        code.result = tr("q = %1, x' = (q − zero point) × scale").arg(r.codes[static_cast<size_t>(index)]);
        m_bitLayout->setCode(code, context);
    } else {
        m_bitLayout->setCode(decodeElementBits(*m_format, bits), context);
    }
    // Ring the same value on the element number line when it is there.
    const auto& values = m_format->element_values;
    ElementCode decoded = decodeElementBits(*m_format, bits);
    if (decoded.valid) {
        const auto it = std::find(values.begin(), values.end(), static_cast<float>(decoded.value));
        if (it != values.end()) m_numberLine->setSelectedGridIndex(static_cast<int>(it - values.begin()));
    }
}

void FormatExplorerView::saveSettings(QSettings& settings) const {
    settings.setValue(QStringLiteral("explorer/format"), currentFormat());
    settings.setValue(QStringLiteral("explorer/scaleMode"), static_cast<int>(m_scaleMode));
    settings.setValue(QStringLiteral("explorer/outerSplitter"), m_outerSplitter->saveState());
    settings.setValue(QStringLiteral("explorer/mainSplitter"), m_mainSplitter->saveState());
    settings.setValue(QStringLiteral("explorer/anatomySplitter"), m_anatomySplitter->saveState());
    settings.setValue(QStringLiteral("explorer/walkthroughSplitter"), m_walkthrough->splitter()->saveState());
}

void FormatExplorerView::restoreSettings(const QSettings& settings) {
    m_outerSplitter->restoreState(settings.value(QStringLiteral("explorer/outerSplitter")).toByteArray());
    m_mainSplitter->restoreState(settings.value(QStringLiteral("explorer/mainSplitter")).toByteArray());
    m_anatomySplitter->restoreState(settings.value(QStringLiteral("explorer/anatomySplitter")).toByteArray());
    m_walkthrough->splitter()->restoreState(settings.value(QStringLiteral("explorer/walkthroughSplitter")).toByteArray());
    const int mode = settings.value(QStringLiteral("explorer/scaleMode"), static_cast<int>(ScaleMode::Auto)).toInt();
    const QString format = settings.value(QStringLiteral("explorer/format")).toString();
    if (!format.isEmpty()) selectFormat(format);
    setScaleMode(mode >= 0 && mode <= 2 ? static_cast<ScaleMode>(mode) : ScaleMode::Auto);
}

}  // namespace ql
