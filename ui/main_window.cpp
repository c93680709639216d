// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/format_explorer_view.h"
#include "ui/theme_manager.h"

namespace ql {

MainWindow::MainWindow(const RuntimeInfo& runtime, QWidget* parent) : QMainWindow(parent), m_runtime(runtime) {
    setWindowTitle(tr("QuantLab"));
    setWindowIcon(QIcon(QStringLiteral(":/quantlab/icons/quantlab.svg")));
    m_theme = new ThemeManager(this);
    m_theme->apply(ThemeManager::savedTheme());

    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_navigation = new QListWidget(central);
    m_navigation->setObjectName(QStringLiteral("navigation"));
    m_navigation->setFixedWidth(168);
    m_navigation->setFrameShape(QFrame::NoFrame);
    m_navigation->setFocusPolicy(Qt::TabFocus);
    layout->addWidget(m_navigation);
    m_stack = new QStackedWidget(central);
    layout->addWidget(m_stack, 1);
    setCentralWidget(central);

    createMenus();
    createStatusBar(runtime);

    m_explorer = new FormatExplorerView;
    m_explorer->setObjectName(QStringLiteral("formatExplorer"));
    addView(QStringLiteral("format-explorer"), tr("Format Explorer"), m_explorer, tr("&Explorer"), m_explorer->viewActions());

    connect(m_navigation, &QListWidget::currentRowChanged, this, &MainWindow::onViewChanged);
    m_navigation->setCurrentRow(0);
    resize(1440, 920);
    restoreSettings();
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* screenshot = file->addAction(tr("Save Window Screenshot…"), this, &MainWindow::saveWindowScreenshot);
    screenshot->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    m_viewMenu = menuBar()->addMenu(tr("&View"));
    m_viewMenuAnchor = m_viewMenu->addSeparator();
    QMenu* themes = m_viewMenu->addMenu(tr("&Theme"));
    auto* group = new QActionGroup(this);
    QAction* light = themes->addAction(tr("&Light"), this, [this] { m_theme->apply(ThemeManager::Theme::Light); });
    QAction* dark = themes->addAction(tr("&Dark"), this, [this] { m_theme->apply(ThemeManager::Theme::Dark); });
    for (QAction* a : {light, dark}) {
        a->setCheckable(true);
        group->addAction(a);
    }
    auto syncTheme = [light, dark](ThemeManager::Theme t) {
        light->setChecked(t == ThemeManager::Theme::Light);
        dark->setChecked(t == ThemeManager::Theme::Dark);
    };
    syncTheme(m_theme->theme());
    connect(m_theme, &ThemeManager::themeChanged, this, syncTheme);
    QAction* toggle = m_viewMenu->addAction(tr("Toggle Light/Dark Theme"), m_theme, &ThemeManager::toggle);
    toggle->setObjectName(QStringLiteral("toggleThemeAction"));
    toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    QAction* fullScreen = m_viewMenu->addAction(tr("Full Screen"), this, [this](bool on) {
        on ? showFullScreen() : showNormal();
    });
    fullScreen->setCheckable(true);
    fullScreen->setShortcut(QKeySequence::FullScreen);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    m_helpMenuAction = help->menuAction();
    QAction* keys = help->addAction(tr("Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("About QuantLab"), this, &MainWindow::showAbout);
    help->addAction(tr("About Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::createStatusBar(const RuntimeInfo& runtime) {
    auto add = [this](const QString& text, const QString& tip, const QString& name) {
        auto* label = new QLabel(text, this);
        label->setToolTip(tip);
        label->setObjectName(name);
        statusBar()->addPermanentWidget(label);
        m_statusLabels << label;
        return label;
    };
    add(tr("QuantLab %1").arg(QString::fromStdString(runtime.quantlab_version)), tr("QuantLab version"),
        QStringLiteral("statusVersion"));
    add(tr("CPU threads: %1").arg(runtime.threads), tr("Intra-op threads used by LibTorch and QuantLab's kernels"),
        QStringLiteral("statusThreads"));
    const QString blasPath = QString::fromStdString(runtime.blas);
    QLabel* blas = add(tr("BLAS: %1").arg(QFileInfo(blasPath).fileName().isEmpty() ? blasPath : QFileInfo(blasPath).fileName()),
                       blasPath, QStringLiteral("statusBlas"));
    if (runtime.reference_blas) {
        blas->setText(tr("BLAS: reference (slow)"));
        blas->setToolTip(tr("%1\nThe reference BLAS makes matrix products ~40× slower. Install libopenblas0-pthread.").arg(blasPath));
        blas->setStyleSheet(QStringLiteral("color: #d9534f; font-weight: 600;"));
    }
    add(tr("LibTorch %1").arg(QString::fromStdString(runtime.torch_version)), tr("LibTorch version"),
        QStringLiteral("statusTorch"));
    add(runtime.cuda_kernels ? tr("CUDA kernels: built") : tr("CUDA kernels: not built"),
        tr("Whether this build contains QuantLab's CUDA kernels"), QStringLiteral("statusCuda"));
}

QString MainWindow::statusSummary() const {
    QStringList parts;
    for (const QLabel* l : m_statusLabels) parts << l->text();
    return parts.join(QStringLiteral(" | "));
}

void MainWindow::addView(const QString& id, const QString& title, QWidget* view, const QString& menuTitle,
                         const QList<QAction*>& actions) {
    View v;
    v.id = id;
    v.widget = view;
    v.actions = actions;
    m_stack->addWidget(view);
    auto* item = new QListWidgetItem(title, m_navigation);
    item->setData(Qt::UserRole, id);
    const int index = static_cast<int>(m_views.size());
    v.goTo = new QAction(title, this);
    if (index < 9) v.goTo->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + index)));
    connect(v.goTo, &QAction::triggered, this, [this, id] { showView(id); });
    m_viewMenu->insertAction(m_viewMenuAnchor, v.goTo);
    item->setToolTip(tr("%1 (%2)").arg(title, v.goTo->shortcut().toString(QKeySequence::NativeText)));
    if (!actions.isEmpty()) {
        v.menu = new QMenu(menuTitle.isEmpty() ? title : menuTitle, this);
        for (QAction* a : actions) {
            if (a)
                v.menu->addAction(a);
            else
                v.menu->addSeparator();
        }
        menuBar()->insertMenu(m_helpMenuAction, v.menu);
    }
    m_views.push_back(v);
    onViewChanged(m_navigation->currentRow());
}

bool MainWindow::showView(const QString& id) {
    for (int i = 0; i < m_views.size(); ++i)
        if (m_views[i].id == id) {
            m_navigation->setCurrentRow(i);
            return true;
        }
    return false;
}

QString MainWindow::currentViewId() const {
    const int i = m_stack->currentIndex();
    return i >= 0 && i < m_views.size() ? m_views[i].id : QString();
}

QStringList MainWindow::viewIds() const {
    QStringList ids;
    for (const View& v : m_views) ids << v.id;
    return ids;
}

void MainWindow::onViewChanged(int index) {
    if (index < 0 || index >= m_views.size()) return;
    m_stack->setCurrentIndex(index);
    // Only the shown view's shortcuts may fire; its menu is the only view menu in the bar.
    for (int i = 0; i < m_views.size(); ++i) {
        const bool current = i == index;
        for (QAction* a : m_views[i].actions)
            if (a) a->setEnabled(current);
        if (m_views[i].menu) m_views[i].menu->menuAction()->setVisible(current);
        m_views[i].goTo->setCheckable(true);
        m_views[i].goTo->setChecked(current);
    }
    setWindowTitle(tr("%1 — QuantLab").arg(m_navigation->item(index)->text()));
}

void MainWindow::openProject(const QString& path) {
    statusBar()->showMessage(
        tr("Project files arrive with the project explorer in a later version; '%1' was not opened.").arg(path), 15000);
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/view"), currentViewId());
    m_explorer->saveSettings(settings);
}

void MainWindow::restoreSettings() {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_explorer->restoreSettings(settings);
    const QString view = settings.value(QStringLiteral("window/view")).toString();
    if (!view.isEmpty()) showView(view);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    QMainWindow::closeEvent(event);
}

void MainWindow::saveWindowScreenshot() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    const QString path = QFileDialog::getSaveFileName(this, tr("Save window screenshot"),
                                                      dir + QStringLiteral("/quantlab-%1.png").arg(currentViewId()),
                                                      tr("PNG image (*.png)"));
    if (path.isEmpty()) return;
    for (QCustomPlot* plot : findChildren<QCustomPlot*>()) plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!grab().save(path, "PNG"))
        QMessageBox::warning(this, tr("Save window screenshot"), tr("Could not write '%1'.").arg(path));
    else
        statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

void MainWindow::showShortcuts() {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Keyboard Shortcuts"));
    auto* layout = new QVBoxLayout(&dialog);
    auto* table = new QTableWidget(0, 2, &dialog);
    table->setHorizontalHeaderLabels({tr("Action"), tr("Shortcut")});
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    for (QAction* menuAction : menuBar()->actions()) {
        QMenu* menu = menuAction->menu();
        if (!menu) continue;
        QList<QAction*> actions = menu->actions();
        for (int i = 0; i < actions.size(); ++i) {
            QAction* a = actions[i];
            if (a->menu()) actions << a->menu()->actions();
            if (a->shortcut().isEmpty()) continue;
            const int row = table->rowCount();
            table->insertRow(row);
            table->setItem(row, 0, new QTableWidgetItem(QString(a->text()).remove(QLatin1Char('&'))));
            table->setItem(row, 1, new QTableWidgetItem(a->shortcut().toString(QKeySequence::NativeText)));
        }
    }
    layout->addWidget(table);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(460, 520);
    dialog.exec();
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, tr("About QuantLab"),
        tr("<h3>QuantLab %1</h3><p>A desktop workbench for quantization experiments.</p>"
           "<p>Qt %2 · QCustomPlot %3 · LibTorch %4</p>"
           "<p>QuantLab is free software under the GNU General Public License version 3 or later. "
           "It uses QCustomPlot (GPL-3.0), Qt (LGPL-3.0) and LibTorch (BSD).</p>")
            .arg(QString::fromStdString(m_runtime.quantlab_version), QString::fromLatin1(qVersion()),
                 QStringLiteral(QCUSTOMPLOT_VERSION_STR), QString::fromStdString(m_runtime.torch_version)));
}

}  // namespace ql
