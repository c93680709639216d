// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI thread never blocks: while a QAD run trains on the worker thread (and the dashboard
// draws its curves), a 5 ms timer on the GUI thread measures how late the event loop serves it.
// Issue target: no stall above 50 ms on 2 cores. Runs alone (RUN_SERIAL in CMake).
#include <QElapsedTimer>
#include <QFile>
#include <QSpinBox>
#include <QTimer>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "demo_fixture.h"
#include "ui/dashboard_view.h"
#include "ui/model_panel.h"
#include "ui/recipe_editor.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

namespace ql {
namespace {

TEST(GuiLatency, EventLoopNeverStallsDuringAQadRun) {
    test::ensureQuickDemo();
    auto window = test::makeMainWindow();
    Workbench* w = window->workbench();
    const QString project = test::scratchDir() + QStringLiteral("/latency.qlab");
    QFile::remove(project);
    ASSERT_TRUE(window->openProject(project, true));
    window->openModel(QStringLiteral("demo"));
    ASSERT_TRUE(test::waitFor([&] { return w->modelPanel()->hasModel(); }, 60000));
    w->recipeEditor()->applyQuickStart(QStringLiteral("NVFP4 QAD"));
    w->recipeEditor()->setSteps(60);
    w->recipeEditor()->setEvalEvery(20);
    w->recipeEditor()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(32);
    test::settle(400);  // let the recipe plan finish before measuring

    std::vector<double> gaps;
    QElapsedTimer clock;
    QTimer tick;
    tick.setInterval(5);
    double last = 0;
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const double now = clock.nsecsElapsed() / 1e6;
        gaps.push_back(now - last);
        last = now;
    });
    ASSERT_TRUE(w->startRun());
    clock.start();
    tick.start();
    ASSERT_TRUE(w->runner()->waitForFinished(300000));
    tick.stop();
    ASSERT_GT(gaps.size(), 100u);
    const qint64 run = w->runner()->runId();
    EXPECT_GE(w->dashboard()->pointCount(run, QStringLiteral("train/loss")), 1);
    std::vector<double> sorted = gaps;
    std::sort(sorted.begin(), sorted.end());
    const double p99 = sorted[sorted.size() * 99 / 100];
    const double worst = sorted.back();
    // Recorded for the closing note / docs/GUI.md; the timer asks for 5 ms.
    std::printf("event loop during QAD: %zu ticks, median %.1f ms, p99 %.1f ms, max %.1f ms\n", sorted.size(),
                sorted[sorted.size() / 2], p99, worst);
    EXPECT_LE(worst, 50.0) << "the GUI thread stalled for " << worst << " ms";
}

}  // namespace
}  // namespace ql
