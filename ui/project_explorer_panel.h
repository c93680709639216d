// SPDX-License-Identifier: GPL-3.0-or-later
// The runs of the open project: status, method, recipe, key metrics, when. Several can be
// selected: the dashboard overlays their curves and the compare view ranks them. A run that
// quantlab-cli is writing in another process shows as running, with its process.
#pragma once

#include <QList>
#include <QVector>
#include <QWidget>

#include "ui/project_watcher.h"

class QLabel;
class QPushButton;
class QTreeWidget;

namespace ql {

class ProjectExplorerPanel : public QWidget {
    Q_OBJECT
public:
    explicit ProjectExplorerPanel(QWidget* parent = nullptr);

    void setProjectName(const QString& name);
    void setRuns(const QVector<RunRow>& runs);
    const QVector<RunRow>& runs() const { return m_runs; }
    QList<qint64> selectedRuns() const;
    void selectRuns(const QList<qint64>& ids);
    const RunRow* run(qint64 id) const;
    QTreeWidget* tree() const { return m_tree; }

signals:
    void selectionChanged(const QList<qint64>& runIds);
    void resumeRequested(qint64 runId);
    void exportRequested(qint64 runId);
    void deleteRequested(qint64 runId);

private:
    void showContextMenu(const QPoint& pos);
    void updateButtons();

    QLabel* m_title = nullptr;
    QTreeWidget* m_tree = nullptr;
    QPushButton* m_export = nullptr;
    QVector<RunRow> m_runs;
    bool m_updating = false;
};

}  // namespace ql
