// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/run_checklist.h"

#include <QListWidget>
#include <QStringList>

namespace ql {

void fillRunChecklist(QListWidget* list, const QList<RunCandidate>& candidates, const QString& emptyText) {
    QStringList checked;
    for (int i = 0; i < list->count(); ++i)
        if (list->item(i)->checkState() == Qt::Checked) checked << list->item(i)->data(Qt::UserRole).toString();
    list->clear();
    for (const RunCandidate& c : candidates) {
        auto* item = new QListWidgetItem(c.label, list);  // owned by the list
        item->setData(Qt::UserRole, c.path);
        item->setToolTip(c.path);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(c.path) ? Qt::Checked : Qt::Unchecked);
    }
    if (candidates.isEmpty()) {
        auto* item = new QListWidgetItem(emptyText, list);
        item->setFlags(Qt::NoItemFlags);
    }
}

bool checkRun(QListWidget* list, const QString& path, bool checked) {
    for (int i = 0; i < list->count(); ++i)
        if (list->item(i)->data(Qt::UserRole).toString() == path) {
            list->item(i)->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
            return true;
        }
    return false;
}

}  // namespace ql
