// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/model_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QRegularExpression>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "engine/core/format_catalog.h"

namespace ql {
namespace {

enum Column { Name, Type, Shape, Parameters, Format, Inputs, Bits, ColumnCount };

QString shapeText(const std::vector<int64_t>& shape) {
    QStringList parts;
    for (int64_t d : shape) parts << QString::number(d);
    return parts.join(QStringLiteral(" × "));
}

QString countText(double n) {
    if (n >= 1e9) return QStringLiteral("%1 B").arg(n / 1e9, 0, 'f', 2);
    if (n >= 1e6) return QStringLiteral("%1 M").arg(n / 1e6, 0, 'f', 2);
    if (n >= 1e3) return QStringLiteral("%1 K").arg(n / 1e3, 0, 'f', 1);
    return QString::number(n, 'f', 0);
}

// "model.layers.3.mlp.up_proj" -> ("model.layers.3", "mlp.up_proj"): the block a layer belongs
// to is the prefix up to its index, which is how people navigate a transformer.
std::pair<QString, QString> splitBlock(const QString& name) {
    static const QRegularExpression re(QStringLiteral("^(.*?\\.\\d+)\\.(.+)$"));
    const auto m = re.match(name);
    if (m.hasMatch()) return {m.captured(1), m.captured(2)};
    return {QString(), name};
}

}  // namespace

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_summaryLabel = new QLabel(tr("No model open. File ▸ Open Model… or drop an HF folder here."), this);
    m_summaryLabel->setObjectName(QStringLiteral("modelSummary"));
    m_summaryLabel->setWordWrap(true);
    m_summaryLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summaryLabel);
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("layerFilter"));
    m_filter->setPlaceholderText(tr("Filter layers (e.g. mlp, layers.3, q_proj)"));
    m_filter->setClearButtonEnabled(true);
    layout->addWidget(m_filter);
    m_tree = new QTreeWidget(this);
    m_tree->setObjectName(QStringLiteral("layerTree"));
    m_tree->setHeaderLabels({tr("Layer"), tr("Type"), tr("Shape"), tr("Parameters"), tr("Weights"), tr("Inputs"), tr("Bits/param")});
    m_tree->setAlternatingRowColors(true);
    m_tree->setUniformRowHeights(true);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    // Every column fits its contents (a layer name cut to "s…" tells nothing); a narrow panel
    // scrolls sideways instead.
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_tree->header()->setStretchLastSection(false);
    m_tree->setToolTip(tr("Right-click a layer to choose its own format (mixed precision)."));
    layout->addWidget(m_tree, 1);
    connect(m_filter, &QLineEdit::textChanged, this, &ModelPanel::applyFilter);
    connect(m_tree, &QWidget::customContextMenuRequested, this, &ModelPanel::showContextMenu);
    connect(m_tree, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        const QString layer = item->data(Name, Qt::UserRole).toString();
        if (!layer.isEmpty()) emit inspectLayerRequested(layer);
    });
}

void ModelPanel::setLoading(const QString& path) {
    m_hasModel = false;
    m_tree->clear();
    m_summaryLabel->setText(tr("Opening %1 …").arg(path));
}

void ModelPanel::setLoadError(const QString& message) {
    m_hasModel = false;
    m_tree->clear();
    m_summaryLabel->setText(tr("<span style='color:#d9534f'>The model could not be opened: %1</span>").arg(message.toHtmlEscaped()));
}

void ModelPanel::setModel(const ModelSummary& summary) {
    m_summary = summary;
    m_hasModel = true;
    m_planned = summary.layers;
    rebuild();
}

void ModelPanel::setPlannedLayers(const std::vector<LayerSummary>& layers, const QMap<QString, QString>& overrides) {
    m_planned = layers;
    m_overrides = overrides;
    rebuild();
}

int ModelPanel::visibleLayerCount() const {
    int n = 0;
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it)
        if (!(*it)->isHidden() && !(*it)->data(Name, Qt::UserRole).toString().isEmpty()) ++n;
    return n;
}

void ModelPanel::rebuild() {
    if (!m_hasModel) return;
    const ModelSummary& s = m_summary;
    double quantizedBits = 0, layerParams = 0;
    for (const LayerSummary& l : m_planned) {
        const double w = static_cast<double>(l.parameters);
        quantizedBits += l.weight_bits * w;
        layerParams += w;
    }
    const QString arch = QString::fromStdString(s.config.architecture);
    m_summaryLabel->setText(
        tr("<b>%1</b> — %2%3<br>%4 parameters (%5 MB in memory), %6 quantizable layers; with the current recipe "
           "they average <b>%7 bits/param</b>.")
            .arg(QString::fromStdString(s.path).toHtmlEscaped(), arch.isEmpty() ? tr("model") : arch,
                 s.is_demo ? tr(" · built-in demo") : QString(), countText(static_cast<double>(s.parameter_count)))
            .arg(static_cast<double>(s.parameter_bytes) / 1e6, 0, 'f', 1)
            .arg(s.layers.size())
            .arg(layerParams > 0 ? quantizedBits / layerParams : 16.0, 0, 'f', 2));
    m_tree->clear();
    QMap<QString, QTreeWidgetItem*> blocks;
    for (const LayerSummary& l : m_planned) {
        const QString name = QString::fromStdString(l.name);
        auto [block, leaf] = splitBlock(name);
        QTreeWidgetItem* parent = nullptr;
        if (!block.isEmpty()) {
            parent = blocks.value(block);
            if (!parent) {
                parent = new QTreeWidgetItem(m_tree, {block});
                parent->setFirstColumnSpanned(false);
                blocks.insert(block, parent);
                parent->setExpanded(blocks.size() <= 2);
            }
        }
        auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(m_tree);
        item->setText(Name, leaf);
        item->setData(Name, Qt::UserRole, name);
        item->setToolTip(Name, name);
        item->setText(Type, QString::fromStdString(l.kind));
        item->setText(Shape, shapeText(l.weight_shape));
        item->setText(Parameters, countText(static_cast<double>(l.parameters)));
        item->setTextAlignment(Parameters, Qt::AlignRight | Qt::AlignVCenter);
        QString format = l.weight_format.empty() ? tr("BF16") : QString::fromStdString(l.weight_quantizer);
        item->setText(Inputs, l.input_quantizer == "off" ? tr("—") : QString::fromStdString(l.input_quantizer));
        if (m_overrides.contains(name)) {
            format += tr("  (override)");
            QFont f = item->font(Format);
            f.setBold(true);
            item->setFont(Format, f);
        }
        QString tip = format;
        if (!l.weight_fallback.empty()) {
            // The recipe asked for a GGUF type whose blocks do not fit these rows.
            format += tr("  (fallback)");
            tip += QLatin1Char('\n') + QString::fromStdString(l.weight_fallback);
        }
        item->setText(Format, format);
        item->setToolTip(Format, tip);
        item->setText(Bits, QString::number(l.weight_bits, 'f', 2));
        item->setTextAlignment(Bits, Qt::AlignRight | Qt::AlignVCenter);
    }
    applyFilter();
}

void ModelPanel::setFilter(const QString& text) { m_filter->setText(text); }

void ModelPanel::applyFilter() {
    const QString text = m_filter->text().trimmed();
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem* top = m_tree->topLevelItem(i);
        if (top->childCount() == 0) {
            top->setHidden(!text.isEmpty() && !top->data(Name, Qt::UserRole).toString().contains(text, Qt::CaseInsensitive));
            continue;
        }
        bool any = false;
        for (int c = 0; c < top->childCount(); ++c) {
            QTreeWidgetItem* child = top->child(c);
            const bool match = text.isEmpty() || child->data(Name, Qt::UserRole).toString().contains(text, Qt::CaseInsensitive) ||
                               child->text(Format).contains(text, Qt::CaseInsensitive);
            child->setHidden(!match);
            any = any || match;
        }
        top->setHidden(!any);
        if (!text.isEmpty() && any) top->setExpanded(true);
    }
}

void ModelPanel::showContextMenu(const QPoint& pos) {
    QTreeWidgetItem* item = m_tree->itemAt(pos);
    if (!item) return;
    const QString layer = item->data(Name, Qt::UserRole).toString();
    if (layer.isEmpty()) return;
    QMenu menu(this);
    QMenu* formats = menu.addMenu(tr("Set Weight Format"));
    // Recipes quantize Linear and Conv2d layers (docs/RECIPES.md); embeddings are listed for their
    // size but have no quantizers to configure.
    const bool configurable = item->text(Type) != QLatin1String("embedding");
    formats->setEnabled(configurable);
    for (const FormatInfo& f : all_formats()) {
        if (f.family == "passthrough" || f.family == "gguf") continue;
        const QString name = QString::fromStdString(f.name);
        formats->addAction(QStringLiteral("%1 (%2 bits)").arg(QString::fromStdString(f.title)).arg(f.bits_per_element, 0, 'g', 4),
                           this, [this, layer, name] { emit layerFormatRequested(layer, name); });
    }
    menu.addAction(tr("Keep in High Precision"), this, [this, layer] { emit layerFormatRequested(layer, QStringLiteral("off")); })
        ->setEnabled(configurable);
    QAction* follow = menu.addAction(tr("Follow the Recipe"), this, [this, layer] { emit layerFormatRequested(layer, QString()); });
    follow->setEnabled(m_overrides.contains(layer));
    menu.addSeparator();
    menu.addAction(tr("Inspect Layer"), this, [this, layer] { emit inspectLayerRequested(layer); });
    menu.exec(m_tree->viewport()->mapToGlobal(pos));
}

}  // namespace ql
