// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/project_explorer_panel.h"

#include <QDateTime>
#include <QHeaderView>
#include <QLabel>
#include <QHBoxLayout>
#include <QMenu>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/run_metrics.h"

namespace ql {
namespace {

enum Column { Id, Name, Status, Accuracy, Kl, Bits, Kind, Recipe, Started, ColumnCount };

QColor statusColor(const QString& status) {
    if (status == QLatin1String("running")) return QColor(0x2b, 0x8a, 0x3e);
    if (status == QLatin1String("failed")) return QColor(0xd9, 0x53, 0x4f);
    if (status == QLatin1String("interrupted") || status == QLatin1String("cancelled")) return QColor(0xc0, 0x7b, 0x00);
    return {};
}

}  // namespace

ProjectExplorerPanel::ProjectExplorerPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_title = new QLabel(tr("No project"), this);
    m_title->setObjectName(QStringLiteral("projectTitle"));
    QFont f = m_title->font();
    f.setBold(true);
    m_title->setFont(f);
    layout->addWidget(m_title);
    m_tree = new QTreeWidget(this);
    m_tree->setObjectName(QStringLiteral("runTree"));
    m_tree->setRootIsDecorated(false);
    m_tree->setAlternatingRowColors(true);
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setSortingEnabled(true);
    m_tree->setUniformRowHeights(true);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    m_tree->setHeaderLabels({tr("#"), tr("Run"), tr("Status"), tr("Exact match"), tr("KL"), tr("Bits/param"), tr("Method"),
                             tr("Recipe"), tr("Started")});
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_tree->sortByColumn(Id, Qt::DescendingOrder);
    m_tree->setToolTip(tr("Select several runs (Ctrl/Shift+click) to overlay their curves and compare them."));
    layout->addWidget(m_tree, 1);
    auto* buttons = new QHBoxLayout;
    m_export = new QPushButton(tr("Export…"), this);
    m_export->setObjectName(QStringLiteral("exportRun"));
    m_export->setToolTip(tr("Export the selected run: Model Optimizer HF checkpoint, GGUF, fake-quantized checkpoint or report"));
    m_export->setEnabled(false);
    buttons->addStretch(1);
    buttons->addWidget(m_export);
    layout->addLayout(buttons);
    connect(m_export, &QPushButton::clicked, this, [this] {
        const QList<qint64> ids = selectedRuns();
        if (ids.size() == 1) emit exportRequested(ids.first());
    });
    connect(m_tree, &QTreeWidget::itemSelectionChanged, this, [this] {
        updateButtons();
        if (!m_updating) emit selectionChanged(selectedRuns());
    });
    connect(m_tree, &QWidget::customContextMenuRequested, this, &ProjectExplorerPanel::showContextMenu);
}

void ProjectExplorerPanel::setProjectName(const QString& name) { m_title->setText(name); }

const RunRow* ProjectExplorerPanel::run(qint64 id) const {
    for (const RunRow& r : m_runs)
        if (r.id == id) return &r;
    return nullptr;
}

void ProjectExplorerPanel::setRuns(const QVector<RunRow>& runs) {
    const QList<qint64> selected = selectedRuns();
    m_updating = true;
    m_runs = runs;
    m_tree->setSortingEnabled(false);
    m_tree->clear();
    const RunMetric accuracy = compareMetrics()[0];
    const RunMetric kl = compareMetrics()[3];
    const RunMetric bits = compareMetrics()[7];
    for (const RunRow& r : runs) {
        auto* item = new QTreeWidgetItem;
        item->setData(Id, Qt::DisplayRole, r.id);
        item->setText(Name, r.name.isEmpty() ? r.kind : r.name);
        QString status = r.status;
        if (r.status == QLatin1String("running") && r.writerPid != 0) status += tr(" (pid %1)").arg(r.writerPid);
        if (r.status == QLatin1String("running") && r.lastStep > 0) status += tr(" · step %1").arg(r.lastStep);
        item->setText(Status, status);
        item->setForeground(Status, statusColor(r.status));
        item->setText(Kind, r.kind.toUpper());
        item->setText(Recipe, r.recipe);
        for (auto [col, m] : {std::pair{Accuracy, accuracy}, std::pair{Kl, kl}, std::pair{Bits, bits}}) {
            if (auto v = runMetricValue(r, m)) {
                item->setText(col, formatMetric(m, *v));
                item->setData(col, Qt::UserRole, *v);
                item->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
            }
        }
        if (r.startedAt > 0)
            item->setText(Started, QDateTime::fromSecsSinceEpoch(static_cast<qint64>(r.startedAt)).toString(QStringLiteral("MM-dd HH:mm")));
        QString tip = tr("Run %1 (%2) on %3\nModel: %4\nRecipe: %5").arg(r.id).arg(r.status, r.host, r.model, r.recipe);
        if (!r.message.isEmpty()) tip += QLatin1Char('\n') + r.message;
        for (int c = 0; c < ColumnCount; ++c) item->setToolTip(c, tip);
        m_tree->addTopLevelItem(item);
        if (selected.contains(r.id)) item->setSelected(true);
    }
    m_tree->setSortingEnabled(true);
    m_updating = false;
    updateButtons();
    if (selectedRuns() != selected) emit selectionChanged(selectedRuns());
}

QList<qint64> ProjectExplorerPanel::selectedRuns() const {
    QList<qint64> ids;
    for (QTreeWidgetItem* item : m_tree->selectedItems()) ids << item->data(Id, Qt::DisplayRole).toLongLong();
    std::sort(ids.begin(), ids.end());
    return ids;
}

void ProjectExplorerPanel::selectRuns(const QList<qint64>& ids) {
    m_updating = true;
    m_tree->clearSelection();
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem* item = m_tree->topLevelItem(i);
        if (ids.contains(item->data(Id, Qt::DisplayRole).toLongLong())) item->setSelected(true);
    }
    m_updating = false;
    emit selectionChanged(selectedRuns());
}

void ProjectExplorerPanel::updateButtons() {
    const QList<qint64> ids = selectedRuns();
    const RunRow* r = ids.size() == 1 ? run(ids.first()) : nullptr;
    m_export->setEnabled(r && r->status == QLatin1String("completed") &&
                         (r->kind == QLatin1String("ptq") || r->kind == QLatin1String("qat") || r->kind == QLatin1String("qad")));
}

void ProjectExplorerPanel::showContextMenu(const QPoint& pos) {
    QTreeWidgetItem* item = m_tree->itemAt(pos);
    if (!item) return;
    const qint64 id = item->data(Id, Qt::DisplayRole).toLongLong();
    const RunRow* r = run(id);
    if (!r) return;
    QMenu menu(this);
    QAction* resume = menu.addAction(tr("Resume"), this, [this, id] { emit resumeRequested(id); });
    resume->setEnabled((r->status == QLatin1String("cancelled") || r->status == QLatin1String("interrupted")) &&
                       r->kind != QLatin1String("ptq"));
    QAction* exp = menu.addAction(tr("Export…"), this, [this, id] { emit exportRequested(id); });
    exp->setEnabled(r->status == QLatin1String("completed") &&
                    (r->kind == QLatin1String("ptq") || r->kind == QLatin1String("qat") || r->kind == QLatin1String("qad")));
    menu.addSeparator();
    QAction* del = menu.addAction(tr("Delete Run"), this, [this, id] { emit deleteRequested(id); });
    del->setEnabled(!r->liveWriter);
    menu.exec(m_tree->viewport()->mapToGlobal(pos));
}

}  // namespace ql
