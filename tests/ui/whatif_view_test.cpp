// SPDX-License-Identifier: GPL-3.0-or-later
// The What-if view on the demo model, driven offscreen: Compare runs the what-if job on the
// workbench's runner (the GUI thread keeps running events), the table, histograms with the grid
// and per-layer bars show the report, and "Run PTQ with this" puts the choice into the recipe
// editor and starts a real PTQ run with that KV cache and rotation.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>

#include <gtest/gtest.h>

#include "wait_for.h"
#include "plots/bar_chart.h"
#include "plots/histogram_plot.h"
#include "projects/project_file.h"
#include "ui/job_runner.h"
#include "ui/model_panel.h"
#include "ui/recipe_editor.h"
#include "ui/whatif_controller.h"
#include "ui/whatif_view.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

namespace ql {
namespace {

using test::waitFor;

class WhatIfViewTest : public ::testing::Test {
protected:
    void SetUp() override {
        window = test::makeMainWindow();
        w = window->workbench();
        project = QDir(test::scratchDir()).filePath(QStringLiteral("whatif.qlab"));
        QFile::remove(project);
        ASSERT_TRUE(window->openProject(project, true));
        window->openModel(QStringLiteral("demo"));
        ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 60000));
        ASSERT_TRUE(window->showView(QStringLiteral("whatif")));
    }
    std::unique_ptr<MainWindow> window;
    Workbench* w = nullptr;
    QString project;
};

TEST_F(WhatIfViewTest, CompareShowsBeforeAndAfterWithoutBlockingTheGui) {
    WhatIfView* v = w->whatIf();
    ASSERT_TRUE(v->setKvCache(QStringLiteral("nvfp4")));
    ASSERT_TRUE(v->setRotation(QStringLiteral("hadamard")));
    int ticks = 0;
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(20);
    auto* compare = v->findChild<QPushButton*>(QStringLiteral("whatIfCompute"));
    ASSERT_TRUE(compare->isEnabled());
    compare->click();
    EXPECT_TRUE(w->runner()->isRunning());
    EXPECT_FALSE(compare->isEnabled());
    ASSERT_TRUE(w->runner()->waitForFinished(600000));
    ASSERT_TRUE(waitFor([&] { return v->hasReport(); }, 10000)) << w->lastError().toStdString();
    EXPECT_GT(ticks, 0);  // the event loop ran while the job worked
    EXPECT_TRUE(compare->isEnabled());

    const WhatIfReport& r = v->report();
    EXPECT_EQ(r.output_metric, "kl");
    EXPECT_GT(r.output_before, 0.0);
    EXPECT_EQ(r.kv_cache_after, "nvfp4 (global amax per tensor)");
    EXPECT_LT(r.kv_memory_after.bytes_per_token, r.kv_memory_before.bytes_per_token);
    // Every quantized layer's input (7 per block) and K and V of each of the demo's 3 attention layers.
    EXPECT_EQ(v->table()->rowCount(), static_cast<int>(r.tensors.size()));
    EXPECT_EQ(static_cast<int>(r.tensors.size()), 3 * 7 + 2 * 3);
    EXPECT_NE(v->findChild<QLabel*>(QStringLiteral("whatIfSummary"))->text().indexOf(QStringLiteral("per 8k context")), -1);
    // A key's histograms: before filled, after as the overlay, the NVFP4 grid drawn.
    ASSERT_TRUE(v->selectTensor(QStringLiteral("model.layers.0.self_attn.k_cache")));
    auto* h = v->findChild<HistogramPlot*>(QStringLiteral("whatIfHistogram"));
    double before = 0, after = 0;
    for (double c : h->drawnCounts()) before += c > HistogramPlot::kLogZeroCount ? c : 0;
    for (double c : h->drawnOverlayCounts()) after += c > HistogramPlot::kLogZeroCount ? c : 0;
    EXPECT_GT(before, 0);
    EXPECT_GT(after, 0);
    EXPECT_GT(h->drawnGridLineCount(), 0);
    auto* bars = v->findChild<BarChart*>(QStringLiteral("whatIfLayers"));
    EXPECT_EQ(bars->categoryCount(), static_cast<int>(r.layers.size()));
    // Nothing was recorded in the project: a what-if is not a run.
    EXPECT_TRUE(projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly).runs().empty());
}

TEST_F(WhatIfViewTest, RunWithThisStartsThePtqRunWithTheChoice) {
    WhatIfView* v = w->whatIf();
    ASSERT_TRUE(v->setKvCache(QStringLiteral("fp8")));
    ASSERT_TRUE(v->setRotation(QStringLiteral("rht")));
    v->findChild<QPushButton*>(QStringLiteral("whatIfRunPtq"))->click();
    EXPECT_EQ(w->recipeEditor()->kvCache(), QStringLiteral("fp8"));
    EXPECT_EQ(w->recipeEditor()->rotation(), QStringLiteral("rht"));
    EXPECT_NE(w->recipeEditor()->recipeJson().indexOf(QStringLiteral("\"kv_cache\": \"fp8\"")), -1) << w->recipeEditor()->recipeJson().toStdString();
    ASSERT_TRUE(w->runner()->isRunning()) << w->lastError().toStdString();
    ASSERT_TRUE(w->runner()->waitForFinished(600000));
    const auto runs = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly).runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].kind, "ptq");
    EXPECT_EQ(runs[0].status, projects::RunStatus::Completed) << w->lastError().toStdString();
}

}  // namespace
}  // namespace ql
