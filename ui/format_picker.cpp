// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/format_picker.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "engine/core/format_catalog.h"

namespace ql {
namespace {

constexpr int kNameRole = Qt::UserRole + 1;
constexpr int kSearchRole = Qt::UserRole + 2;

// Families in the order users meet them in deployment guides; baselines last.
const char* const kFamilyOrder[] = {"fp8", "nvfp4", "nvfp4_e5m3", "mx", "int", "llm_int8", "nf4", "gguf", "passthrough"};

}  // namespace

QString FormatPicker::familyTitle(const QString& family) {
    if (family == "fp8") return tr("FP8");
    if (family == "nvfp4") return tr("NVFP4");
    if (family == "nvfp4_e5m3") return tr("NVFP4, E5M3 scales");
    if (family == "llm_int8") return tr("LLM.int8() (bitsandbytes)");
    if (family == "mx") return tr("OCP Microscaling (MX)");
    if (family == "int") return tr("Integer");
    if (family == "nf4") return tr("NF4 (QLoRA)");
    if (family == "gguf") return tr("GGUF (llama.cpp)");
    if (family == "passthrough") return tr("Baselines");
    return family;
}

FormatPicker::FormatPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(6);
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("formatFilter"));
    m_filter->setPlaceholderText(tr("Filter formats (Ctrl+F)"));
    m_filter->setClearButtonEnabled(true);
    layout->addWidget(m_filter);

    m_tree = new QTreeWidget(this);
    m_tree->setObjectName(QStringLiteral("formatTree"));
    m_tree->setColumnCount(2);
    m_tree->setHeaderLabels({tr("Format"), tr("bits/elem")});
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_tree->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_tree->setRootIsDecorated(false);
    m_tree->setIndentation(10);
    m_tree->setUniformRowHeights(true);
    m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(m_tree, 1);

    const auto& formats = all_formats();
    for (const char* family : kFamilyOrder) {
        QTreeWidgetItem* group = nullptr;
        for (const auto& f : formats) {
            if (f.family != family) continue;
            if (!group) {
                group = new QTreeWidgetItem(m_tree, {familyTitle(family)});
                group->setFlags(Qt::ItemIsEnabled);
                QFont bold = group->font(0);
                bold.setBold(true);
                group->setFont(0, bold);
                group->setFirstColumnSpanned(true);
            }
            auto* item = new QTreeWidgetItem(group, {QString::fromStdString(f.title),
                                                     QString::number(f.bits_per_element, 'g', 4)});
            item->setData(0, kNameRole, QString::fromStdString(f.name));
            item->setData(0, kSearchRole,
                          QString::fromStdString(f.name + " " + f.title + " " + f.family + " " + f.element.name).toLower());
            item->setToolTip(0, QString::fromStdString(f.summary));
            item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
            item->setToolTip(1, tr("%1 bits per element including scales").arg(f.bits_per_element));
        }
        if (group) group->setExpanded(true);
    }

    connect(m_filter, &QLineEdit::textChanged, this, &FormatPicker::applyFilter);
    connect(m_tree, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* current) {
        if (!current) return;
        const QString name = current->data(0, kNameRole).toString();
        if (!name.isEmpty()) Q_EMIT formatSelected(name);
    });
    // Enter in the filter picks the first match.
    connect(m_filter, &QLineEdit::returnPressed, this, [this] {
        for (QTreeWidgetItem* item : formatItems())
            if (!item->isHidden()) {
                m_tree->setCurrentItem(item);
                m_tree->setFocus();
                return;
            }
    });
}

QList<QTreeWidgetItem*> FormatPicker::formatItems() const {
    QList<QTreeWidgetItem*> items;
    for (int g = 0; g < m_tree->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = m_tree->topLevelItem(g);
        for (int i = 0; i < group->childCount(); ++i) items << group->child(i);
    }
    return items;
}

bool FormatPicker::selectFormat(const QString& name) {
    for (QTreeWidgetItem* item : formatItems()) {
        if (item->data(0, kNameRole).toString() != name) continue;
        if (item->isHidden()) m_filter->clear();
        m_tree->setCurrentItem(item);
        m_tree->scrollToItem(item);
        return true;
    }
    return false;
}

QString FormatPicker::currentFormat() const {
    QTreeWidgetItem* item = m_tree->currentItem();
    return item ? item->data(0, kNameRole).toString() : QString();
}

QStringList FormatPicker::formatNames() const {
    QStringList names;
    for (QTreeWidgetItem* item : formatItems()) names << item->data(0, kNameRole).toString();
    return names;
}

void FormatPicker::step(int delta) {
    QList<QTreeWidgetItem*> visible;
    for (QTreeWidgetItem* item : formatItems())
        if (!item->isHidden()) visible << item;
    if (visible.isEmpty()) return;
    const int at = visible.indexOf(m_tree->currentItem());
    const int next = at < 0 ? 0 : (at + delta + visible.size()) % visible.size();
    m_tree->setCurrentItem(visible[next]);
}

void FormatPicker::focusFilter() {
    m_filter->setFocus();
    m_filter->selectAll();
}

void FormatPicker::applyFilter(const QString& text) {
    const QString needle = text.trimmed().toLower();
    for (int g = 0; g < m_tree->topLevelItemCount(); ++g) {
        QTreeWidgetItem* group = m_tree->topLevelItem(g);
        int shown = 0;
        for (int i = 0; i < group->childCount(); ++i) {
            QTreeWidgetItem* item = group->child(i);
            const bool match = needle.isEmpty() || item->data(0, kSearchRole).toString().contains(needle) ||
                               group->text(0).toLower().contains(needle);
            item->setHidden(!match);
            shown += match ? 1 : 0;
        }
        group->setHidden(shown == 0);
    }
}

}  // namespace ql
