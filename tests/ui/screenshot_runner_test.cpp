// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/screenshot_runner.h"

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include "ui/format_explorer_view.h"
#include "ui/job_runner.h"
#include "ui/main_window.h"
#include "ui/project_explorer_panel.h"
#include "ui/workbench.h"
#include "ui_test_support.h"
#include "wait_for.h"

namespace ql {
namespace {

TEST(ScreenshotRunner, WritesEachShotAsAPng) {
    auto window = test::makeMainWindow();
    const QString dir = test::scratchDir() + "/shots";
    ScreenshotRunner runner(window.get(), dir);
    // The Format Explorer's shots need no project; two prove the mechanism (the workbench shots
    // wait for a project's model and curves: scripts/screenshots renders them all).
    std::vector<ScreenshotRunner::Shot> shots;
    for (const ScreenshotRunner::Shot& s : ScreenshotRunner::defaultShots())
        if (s.file.startsWith(QStringLiteral("format-explorer")) && shots.size() < 2) shots.push_back(s);
    ASSERT_EQ(shots.size(), 2u);
    runner.setShots(shots);
    QSignalSpy done(&runner, &ScreenshotRunner::finished);
    runner.start();
    ASSERT_TRUE(done.wait(120000));
    EXPECT_EQ(done.at(0).at(0).toInt(), 0);
    ASSERT_EQ(runner.written().size(), 2);
    for (const QString& path : runner.written()) {
        QImage image(path);
        EXPECT_EQ(image.size(), window->size()) << path.toStdString();
        EXPECT_GT(QFileInfo(path).size(), 10000);
    }
    EXPECT_TRUE(QFileInfo::exists(dir + "/format-explorer-nvfp4.png"));
    EXPECT_EQ(window->formatExplorer()->currentFormat(), "mxfp4");
}

TEST(ScreenshotRunner, TheProgressShotStartsAPtqInAProjectOfItsOwnAndShowsItRunning) {
    auto window = test::makeMainWindow(QStringLiteral("workbench"));
    window->workbench()->openModel(QStringLiteral("demo"));
    ScreenshotRunner runner(window.get(), test::scratchDir() + "/progress-shots");
    // The demo is saved whole (not block by block): its first progress report is enough.
    runner.setShots(ScreenshotRunner::progressShots(QStringLiteral("progress"), QStringLiteral("NVFP4_DEFAULT"),
                                                    QStringLiteral("synthetic:arith"), 1));
    QSignalSpy done(&runner, &ScreenshotRunner::finished);
    runner.start();
    ASSERT_TRUE(done.wait(300000));
    EXPECT_EQ(done.at(0).at(0).toInt(), 0);
    ASSERT_EQ(runner.written().size(), 1);
    EXPECT_EQ(QImage(runner.written().front()).size(), window->size());
    // The run went into the shot's own project, with the preset and data it was given.
    Workbench* wb = window->workbench();
    EXPECT_TRUE(wb->projectPath().endsWith(QStringLiteral("/progress.qlab"))) << wb->projectPath().toStdString();
    EXPECT_NE(wb->projectPath(), Workbench::demoProjectPath());
    ASSERT_TRUE(test::waitFor([wb] { return wb->explorer()->runs().size() == 1; }, 60000));
    EXPECT_EQ(wb->explorer()->runs().front().recipe, QStringLiteral("NVFP4_DEFAULT"));
    wb->cancelRun();
    EXPECT_TRUE(wb->runner()->waitForFinished(60000));
}

}  // namespace
}  // namespace ql
