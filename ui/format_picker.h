// SPDX-License-Identifier: GPL-3.0-or-later
// The list of formats grouped by family (FP8, NVFP4, MX, INT, NF4, GGUF, baselines) with a
// filter box; emits the CLI name of the format the user picks.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace ql {

class FormatPicker : public QWidget {
    Q_OBJECT
public:
    explicit FormatPicker(QWidget* parent = nullptr);

    // Selects `name` (a FormatInfo::name); false when there is no such format.
    bool selectFormat(const QString& name);
    QString currentFormat() const;
    // Formats in display order (family by family), as the tree shows them.
    QStringList formatNames() const;
    // Moves the selection by `delta` formats, skipping family headers and hidden items.
    void step(int delta);
    void focusFilter();

    QTreeWidget* tree() const { return m_tree; }
    QLineEdit* filter() const { return m_filter; }

    static QString familyTitle(const QString& family);

Q_SIGNALS:
    void formatSelected(const QString& name);

private:
    void applyFilter(const QString& text);
    QList<QTreeWidgetItem*> formatItems() const;

    QLineEdit* m_filter = nullptr;
    QTreeWidget* m_tree = nullptr;
};

}  // namespace ql
