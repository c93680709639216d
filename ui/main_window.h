// SPDX-License-Identifier: GPL-3.0-or-later
// The application shell: a navigation list on the left, the current view in the middle, menus
// (with each view's own actions), and a status bar with the runtime facts (threads, BLAS,
// LibTorch, version). Views are plain widgets; later issues add the project explorer, model
// panel, recipe editor, dashboard, compare view, log panel and layer inspector with addView().
#pragma once

#include <QList>
#include <QMainWindow>
#include <QString>

#include "engine/api/engine_runtime.h"

class QAction;
class QLabel;
class QListWidget;
class QMenu;
class QStackedWidget;

namespace ql {

class FormatExplorerView;
class ThemeManager;

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

    // A project file given on the command line. Project files arrive with a later issue; until
    // then the window says so instead of failing.
    void openProject(const QString& path);

    FormatExplorerView* formatExplorer() const { return m_explorer; }
    ThemeManager* themeManager() const { return m_theme; }
    QString statusSummary() const;

    void saveSettings() const;
    void restoreSettings();

protected:
    void closeEvent(QCloseEvent* event) override;

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

    ThemeManager* m_theme = nullptr;
    QListWidget* m_navigation = nullptr;
    QStackedWidget* m_stack = nullptr;
    QMenu* m_viewMenu = nullptr;
    QAction* m_viewMenuAnchor = nullptr;  // view entries go above this separator
    QAction* m_helpMenuAction = nullptr;  // view menus go before Help
    QList<View> m_views;
    FormatExplorerView* m_explorer = nullptr;
    QList<QLabel*> m_statusLabels;
    RuntimeInfo m_runtime;
};

}  // namespace ql
