// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/screenshot_runner.h"

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include "ui/format_explorer_view.h"
#include "ui_test_support.h"

namespace ql {
namespace {

TEST(ScreenshotRunner, WritesEachShotAsAPng) {
    auto window = test::makeMainWindow();
    const QString dir = test::scratchDir() + "/shots";
    ScreenshotRunner runner(window.get(), dir);
    std::vector<ScreenshotRunner::Shot> shots = ScreenshotRunner::defaultShots();
    ASSERT_GE(shots.size(), 4u);
    shots.resize(2);  // enough to prove the mechanism; the script renders them all
    runner.setShots(shots);
    QSignalSpy done(&runner, &ScreenshotRunner::finished);
    runner.start();
    ASSERT_TRUE(done.wait(30000));
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

}  // namespace
}  // namespace ql
