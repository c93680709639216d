// SPDX-License-Identifier: GPL-3.0-or-later
// The application shell: on the left the navigation between views above the project explorer
// (the runs of the open project); in the middle the current view (workbench = model panel and
// recipe editor, dashboard, compare, Format Explorer …); the run controls as a tool bar; the log
// as a dock; menus (with each view's own actions) and a status bar with the runtime facts
// (threads, BLAS, LibTorch, memory). Projects (.qlab) and model folders open from the File menu,
// by drag and drop, or from the command line.
#pragma once

#include <QList>
#include <QMainWindow>
#include <QString>

#include "engine/core/engine_runtime.h"

class QAction;
class QLabel;
class QListWidget;
class QMenu;
class QStackedWidget;

namespace ql {

class ExperimentsView;
class GenerateView;
class EvaluationView;
class ExportDoctorView;
class FormatExplorerView;
class ThemeManager;
class Workbench;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const RuntimeInfo& runtime, QWidget* parent = nullptr);

    // Adds `view` (reparented) to the navigation under `title`. `actions` appear in a menu named
    // `menuTitle` and are enabled only while the view is shown (nullptr entries: separators).
    // Views get Ctrl+1, Ctrl+2, … in order.
    void addView(const QString& id, const QString& title, QWidget* view, const QString& menuTitle = QString(),
                 const QList<QAction*>& actions = {});
    bool showView(const QString& id);
    QString currentViewId() const;
    QStringList viewIds() const;

    // A project file (.qlab, created when `create`), or a model folder (HF model or QuantLab
    // checkpoint, opened into the current project or the demo project). Failures are messages.
    bool openProject(const QString& path, bool create = false);
    void openModel(const QString& path);
    // Either of the two, by what `path` is (drag and drop, command line).
    void openPath(const QString& path);
    Workbench* workbench() const { return m_workbench; }

    FormatExplorerView* formatExplorer() const { return m_explorer; }
    ExportDoctorView* exportDoctor() const { return m_doctor; }
    ExperimentsView* experiments() const { return m_experiments; }
    GenerateView* generateView() const { return m_generate; }
    EvaluationView* evaluationView() const { return m_evaluation; }
    ThemeManager* themeManager() const { return m_theme; }
    QString statusSummary() const;

    void saveSettings() const;
    void restoreSettings();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    struct View {
        QString id;
        QWidget* widget = nullptr;
        QMenu* menu = nullptr;
        QList<QAction*> actions;
        QAction* goTo = nullptr;
    };

    void createMenus();
    void createStatusBar(const RuntimeInfo& runtime);
    void onViewChanged(int index);
    void saveWindowScreenshot();
    void showShortcuts();
    void showAbout();
    void createWorkbenchViews();
    void newProjectInteractively();
    void openProjectInteractively();
    void openModelInteractively();
    void updateRecentMenu();
    void updateMemory();
    // The status bar's Device: the running job's device, or the CPU's threads when none runs.
    void showComputeDevice(const QString& device);

    ThemeManager* m_theme = nullptr;
    QListWidget* m_navigation = nullptr;
    QStackedWidget* m_stack = nullptr;
    QMenu* m_viewMenu = nullptr;
    QAction* m_viewMenuAnchor = nullptr;  // view entries go above this separator
    QAction* m_helpMenuAction = nullptr;  // view menus go before Help
    QList<View> m_views;
    FormatExplorerView* m_explorer = nullptr;
    ExportDoctorView* m_doctor = nullptr;
    ExperimentsView* m_experiments = nullptr;
    GenerateView* m_generate = nullptr;
    EvaluationView* m_evaluation = nullptr;
    QList<QLabel*> m_statusLabels;
    Workbench* m_workbench = nullptr;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_fileMenu = nullptr;
    QLabel* m_memory = nullptr;
    QLabel* m_device = nullptr;
    RuntimeInfo m_runtime;
};

}  // namespace ql
