// SPDX-License-Identifier: GPL-3.0-or-later
// Where the error comes from, in the GUI, driven offscreen on the demo: the Layer Inspector's
// Depth and Tokens tabs after a real divergence job (stored in the project and shown again by a
// reopened project without recomputing), a token's curve and its worst layers one click from
// their histogram, and the dashboard's flight-recorder heatmaps of a QAD run recorded by
// quantlab-cli.
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QTableWidget>

#include <gtest/gtest.h>

#include <cmath>

#include "wait_for.h"
#include "plots/bar_chart.h"
#include "plots/heatmap_plot.h"
#include "plots/metric_plot.h"
#include "ui/dashboard_view.h"
#include "ui/depth_view.h"
#include "ui/flight_recorder_panel.h"
#include "ui/inspector_controller.h"
#include "ui/job_runner.h"
#include "ui/layer_inspector_view.h"
#include "ui/model_panel.h"
#include "ui/project_explorer_panel.h"
#include "ui/recipe_editor.h"
#include "ui/token_explorer_view.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

namespace ql {
namespace {

using test::waitFor;

class DiagnosisViewsTest : public ::testing::Test {
protected:
    void openDemo(const QString& name, bool fresh) {
        window = test::makeMainWindow();
        w = window->workbench();
        project = QDir(test::scratchDir()).filePath(name);
        if (fresh) QFile::remove(project);
        ASSERT_TRUE(window->openProject(project, fresh));
        window->openModel(QStringLiteral("demo"));
        ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 60000));
    }
    std::unique_ptr<MainWindow> window;
    Workbench* w = nullptr;
    QString project;
};

TEST_F(DiagnosisViewsTest, DepthAndTokensShowAMeasuredRunAndAReopenedProjectShowsItAgain) {
    openDemo(QStringLiteral("diagnosis.qlab"), true);
    window->showView(QStringLiteral("inspector"));
    LayerInspectorView* v = w->inspector();
    v->showTab(QStringLiteral("depth"));
    EXPECT_EQ(v->currentTab(), QStringLiteral("depth"));
    w->inspectorController()->setDivergenceSamples(48);  // enough for a p99 over the demo's tokens
    ASSERT_TRUE(w->inspectorController()->measureDivergence(QString())) << w->lastError().toStdString();
    ASSERT_TRUE(w->runner()->waitForFinished(1800000));
    DepthView* depth = v->depthView();
    ASSERT_TRUE(waitFor([&] { return depth->blockTable()->rowCount() == 3; }, 120000)) << w->lastError().toStdString();
    ASSERT_EQ(depth->shownRuns().size(), 1);  // a new run is shown at once
    // Propagated and isolated curves over the three blocks; the KL increments below.
    MetricPlot* plot = depth->depthPlot();
    ASSERT_EQ(plot->seriesCount(), 2);
    EXPECT_TRUE(plot->csv().startsWith(QStringLiteral("block,")));
    EXPECT_EQ(depth->incrementChart()->categoryCount(), 3);
    EXPECT_EQ(depth->blockTable()->item(2, 0)->text(), QStringLiteral("model.layers.2"));
    depth->setMeasure(QStringLiteral("kl"));
    depth->setPart(QStringLiteral("attention"));
    EXPECT_EQ(plot->seriesCount(), 2);

    // Tokens: the summary, the worst tokens in context, one token's curve and its worst layers.
    v->showTab(QStringLiteral("tokens"));
    TokenExplorerView* tokens = v->tokenView();
    ASSERT_GT(tokens->tokenTable()->rowCount(), 0);
    EXPECT_TRUE(tokens->summaryLabel()->text().contains(QStringLiteral("p99"))) << tokens->summaryLabel()->text().toStdString();
    const QString text = tokens->tokenText(0);
    EXPECT_TRUE(text.contains(QLatin1Char('=')) && text.contains(QLatin1Char('['))) << text.toStdString();  // a problem
    ASSERT_TRUE(tokens->selectToken(0));
    EXPECT_EQ(tokens->tokenPlot()->seriesCount(), 2);
    EXPECT_EQ(tokens->tokenPlot()->seriesSteps(0).size(), 3u);
    ASSERT_GT(tokens->layerChart()->categoryCount(), 0);
    const QString layer = tokens->layerChart()->bars().front().label;
    EXPECT_TRUE(layer.startsWith(QStringLiteral("model.layers."))) << layer.toStdString();
    // One click from the histogram: no statistics yet, so they are computed, then the layer shown.
    emit tokens->layerChart()->barClicked(layer);
    ASSERT_TRUE(w->runner()->waitForFinished(1800000));
    ASSERT_TRUE(waitFor([&] { return v->currentTab() == QLatin1String("histogram"); }, 120000));
    EXPECT_EQ(v->currentLayer(), layer);

    // Reopened, the project shows the run again without a job.
    window.reset();
    openDemo(QStringLiteral("diagnosis.qlab"), false);
    ASSERT_TRUE(waitFor([&] { return w->inspector()->depthView()->blockTable()->rowCount() == 3; }, 120000));
    EXPECT_FALSE(w->runner()->isRunning());
    EXPECT_GT(w->inspector()->tokenView()->tokenTable()->rowCount(), 0);
}

TEST_F(DiagnosisViewsTest, TheDashboardShowsAQadRunsFlightRecordAsHeatmaps) {
    const QString dir = QDir(test::scratchDir()).filePath(QStringLiteral("flight"));
    QDir(dir).removeRecursively();
    const QString file = QDir(test::scratchDir()).filePath(QStringLiteral("flight.qlab"));
    QFile::remove(file);
    // A short QAD run of quantlab-cli, recorded every 2 steps, into the project.
    QProcess cli;
    cli.start(QStringLiteral(QUANTLAB_CLI),
              {QStringLiteral("train"), QStringLiteral("qad"), QStringLiteral("demo"), QStringLiteral("--recipe"),
               QStringLiteral("NVFP4_DEFAULT"), QStringLiteral("--data"), QStringLiteral("synthetic:arith"),
               QStringLiteral("--steps"), QStringLiteral("6"), QStringLiteral("--batch-size"), QStringLiteral("16"),
               QStringLiteral("--eval-samples"), QStringLiteral("30"), QStringLiteral("--lr"), QStringLiteral("1e-3"),
               QStringLiteral("--record-every"), QStringLiteral("2"), QStringLiteral("--out"), dir,
               QStringLiteral("--project"), file});
    ASSERT_TRUE(cli.waitForFinished(1800000));
    ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
    window = test::makeMainWindow();
    w = window->workbench();
    ASSERT_TRUE(window->openProject(file, false));
    ASSERT_TRUE(waitFor([&] { return !w->explorer()->runs().isEmpty(); }, 120000));
    window->showView(QStringLiteral("dashboard"));
    w->explorer()->selectRuns({w->explorer()->runs().front().id});
    FlightRecorderPanel* flight = w->dashboard()->flightRecorder();
    ASSERT_TRUE(waitFor([&] { return flight->hasData(); }, 120000));
    flight->setQuantity(QStringLiteral("flips_since_start"));
    flight->flush();
    HeatmapPlot* map = flight->heatmap();
    EXPECT_EQ(map->rowCount(), 21);    // the demo's 3 blocks x 7 Linear layers
    EXPECT_EQ(map->columnCount(), 4);  // steps 0, 2, 4, 6
    EXPECT_EQ(map->value(0, 0), 0.0);  // nothing has flipped at the start
    double moved = 0;
    for (int r = 0; r < map->rowCount(); ++r) moved += map->value(r, 3);
    EXPECT_GT(moved, 0.0);
    EXPECT_TRUE(map->csv().startsWith(QStringLiteral(",0,2,4,6")));
    // Flips are not better or worse by size: the scale says only which end is high.
    EXPECT_TRUE(map->neutralScale());
    EXPECT_EQ(map->scaleLabel(), QStringLiteral("fraction of codes, brighter = higher"));
    flight->setQuantity(QStringLiteral("block_distance"));
    flight->flush();
    EXPECT_EQ(map->rowCount(), 3);
    EXPECT_EQ(map->columnCount(), 3);  // recorded steps with a forward: 2, 4, 6
    EXPECT_EQ(map->scaleLabel(), QStringLiteral("relative L2, lower is better"));
    for (const char* q : {"clip_fraction", "amax_drift", "scale_drift", "global_scale_drift"}) {
        flight->setQuantity(QString::fromLatin1(q));
        flight->flush();
        EXPECT_EQ(map->rowCount(), 21) << q;
        EXPECT_FALSE(std::isnan(map->value(0, 3))) << q;
    }
}

TEST(FlightRecorderPanel, WarnsWhileTheRunStagnates) {
    FlightRecorderPanel panel;
    panel.setRuns({{7, QStringLiteral("#7 QAT")}});
    SeriesChunk flips;
    flips.runId = 7;
    flips.name = QStringLiteral("flight/flips_since_last/model.layers.10.mlp.up_proj");
    flips.steps = {0, 10};
    flips.values = {0, 0};
    flips.reset = true;
    SeriesChunk flips2 = flips;
    flips2.name = QStringLiteral("flight/flips_since_last/model.layers.2.mlp.up_proj");
    SeriesChunk stagnating;
    stagnating.runId = 7;
    stagnating.name = QStringLiteral("flight/stagnating");
    stagnating.steps = {10};
    stagnating.values = {1};
    SeriesChunk other = flips;
    other.runId = 8;  // not shown: dropped
    panel.addSeries({flips, flips2, stagnating, other});
    panel.flush();
    EXPECT_EQ(panel.heatmap()->rowCount(), 2);
    // Layers in model order (2 before 10), not in text order.
    EXPECT_TRUE(panel.heatmap()->csv().section(QLatin1Char('\n'), 1, 1).startsWith(QStringLiteral("model.layers.2.")));
    EXPECT_TRUE(panel.warningText().contains(QStringLiteral("Stagnating")));
    SeriesChunk resumed = stagnating;
    resumed.steps = {20};
    resumed.values = {0};
    panel.addSeries({resumed});
    panel.flush();
    EXPECT_TRUE(panel.warningText().isEmpty());
}

}  // namespace
}  // namespace ql
