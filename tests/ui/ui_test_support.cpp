// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui_test_support.h"

#include <QApplication>
#include <QSettings>
#include <QTest>

#include <gtest/gtest.h>

#include "engine/core/engine_runtime.h"
#include "ui/theme_manager.h"

namespace ql::test {
namespace {

QTemporaryDir* g_scratch = nullptr;

class QtEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        static int argc = 1;
        static char name[] = "quantlab_ui_tests";
        static char* argv[] = {name, nullptr};
        // Offscreen unless the caller asks for a platform (QT_QPA_PLATFORM=xcb under xvfb-run).
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
        m_app = std::make_unique<QApplication>(argc, argv);
        QApplication::setOrganizationName(QStringLiteral("QuantLabTests"));
        QApplication::setApplicationName(QStringLiteral("QuantLabTests"));
        g_scratch = new QTemporaryDir;
        // The demo project (XDG_DATA_HOME) and the demo model (XDG_CACHE_HOME) of the tests live
        // in the scratch folder, never in the developer's home.
        qputenv("XDG_DATA_HOME", (g_scratch->path() + QStringLiteral("/data")).toUtf8());
        qputenv("XDG_CACHE_HOME", (g_scratch->path() + QStringLiteral("/cache")).toUtf8());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, g_scratch->path());
        initialise_engine_runtime();
    }
    void TearDown() override {
        delete g_scratch;
        g_scratch = nullptr;
        m_app.reset();
    }

private:
    std::unique_ptr<QApplication> m_app;
};

[[maybe_unused]] ::testing::Environment* const g_environment = ::testing::AddGlobalTestEnvironment(new QtEnvironment);

}  // namespace

QString scratchDir() { return g_scratch ? g_scratch->path() : QString(); }

std::unique_ptr<MainWindow> makeMainWindow(const QString& view) {
    QSettings().setValue(QStringLiteral("ui/theme"), QStringLiteral("light"));
    QSettings().remove(QStringLiteral("window/view"));
    auto window = std::make_unique<MainWindow>(initialise_engine_runtime());
    if (!view.isEmpty()) window->showView(view);
    window->resize(1500, 950);
    window->show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(window.get()));
    // Window shortcuts fire only in the active window.
    window->activateWindow();
    EXPECT_TRUE(QTest::qWaitForWindowActive(window.get()));
    settle();
    return window;
}

void settle(int ms) {
    QApplication::processEvents();
    QTest::qWait(ms);
}

}  // namespace ql::test
