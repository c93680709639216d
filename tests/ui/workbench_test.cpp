// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench driven as a user drives it, offscreen, with the real engine and real project
// files: open the demo, apply a preset, run a short QAD and watch its points arrive, pause and
// resume, cancel, compare two runs, watch a run of quantlab-cli in another process, and get
// messages (not crashes) from bad files.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include <qcustomplot.h>

#include "wait_for.h"
#include "engine/api/model_api.h"
#include "engine/core/demo_folder.h"
#include "engine/core/engine_runtime.h"
#include "plots/bar_chart.h"
#include "projects/project_file.h"
#include "ui/compare_view.h"
#include "ui/dashboard_view.h"
#include "ui/job_runner.h"
#include "ui/log_panel.h"
#include "ui/model_panel.h"
#include "ui/project_explorer_panel.h"
#include "ui/recipe_editor.h"
#include "ui/run_controls.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

namespace ql {
namespace {

using test::waitFor;

class WorkbenchTest : public ::testing::Test {
protected:
    void SetUp() override {
        window = test::makeMainWindow();
        w = window->workbench();
    }
    void TearDown() override {
        if (w->runner()->isRunning()) {
            w->cancelRun();
            w->runner()->waitForFinished(120000);
        }
        window.reset();
    }
    QString freshProject(const QString& name) {
        const QString path = QDir(test::scratchDir()).filePath(name);
        QFile::remove(path);
        return path;
    }
    void openDemoModelIn(const QString& project) {
        ASSERT_TRUE(window->openProject(project, true));
        window->openModel(QStringLiteral("demo"));
        ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 120000)) << w->lastError().toStdString();
    }
    // Short training so the suite stays fast: a few steps on small batches.
    void shortTraining(int steps) {
        w->recipeEditor()->setSteps(steps);
        w->recipeEditor()->setEvalEvery(0);
        w->recipeEditor()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(8);
    }
    projects::RunRecord runRecord(const QString& project, qint64 id) {
        return projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly).run(id);
    }
    void click(const QString& objectName) {
        auto* b = window->findChild<QPushButton*>(objectName);
        ASSERT_NE(b, nullptr) << objectName.toStdString();
        ASSERT_TRUE(b->isEnabled()) << objectName.toStdString() << " is disabled: " << b->toolTip().toStdString();
        QTest::mouseClick(b, Qt::LeftButton);
    }

    std::unique_ptr<MainWindow> window;
    Workbench* w = nullptr;
};

TEST_F(WorkbenchTest, OpensTheDemoProjectWithItsModelAndTheQadPresetReady) {
    // A first start: no demo project, nothing in the cache. The shipped model opens; nothing trains.
    ASSERT_FALSE(QFileInfo::exists(QString::fromStdString(retrained_demo_dir())));
    w->openDemo();
    EXPECT_FALSE(w->runner()->isRunning());
    ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 120000)) << w->lastError().toStdString();
    EXPECT_FALSE(w->runner()->isRunning());
    EXPECT_EQ(w->projectPath(), QFileInfo(Workbench::demoProjectPath()).absoluteFilePath());
    EXPECT_TRUE(QFileInfo::exists(Workbench::demoProjectPath()));
    EXPECT_EQ(w->modelPath(), QStringLiteral("demo"));
    EXPECT_TRUE(w->modelPanel()->summary().is_demo);
    EXPECT_EQ(w->modelPanel()->summary().path, shipped_demo_dir());
    EXPECT_GT(w->modelPanel()->visibleLayerCount(), 4);
    EXPECT_EQ(w->recipeEditor()->preset(), QStringLiteral("NVFP4_DEFAULT"));
    EXPECT_EQ(w->recipeEditor()->method(), RunSetup::Method::Qad);
    // The planner's suggestion appears beside the step count for the demo (its FP tokens are known).
    EXPECT_TRUE(waitFor([&] {
        return w->recipeEditor()->findChild<QLabel*>(QStringLiteral("planner"))->text().contains(QStringLiteral("steps"));
    }, 120000));
}

TEST_F(WorkbenchTest, RetrainDemoTrainsIntoTheCacheWithLiveCurvesThenOpensIt) {
    const QString project = freshProject(QStringLiteral("retrain.qlab"));
    openDemoModelIn(project);
    ASSERT_TRUE(w->retrainDemo(3)) << w->lastError().toStdString();
    EXPECT_EQ(window->currentViewId(), QStringLiteral("dashboard"));
    EXPECT_FALSE(w->retrainDemo(3)) << "a second run while one is in progress";
    ASSERT_TRUE(w->runner()->waitForFinished(300000));
    const qint64 run = w->runner()->runId();
    const projects::RunRecord r = runRecord(project, run);
    EXPECT_EQ(r.status, projects::RunStatus::Completed) << r.message;
    EXPECT_EQ(r.kind, "demo");
    ASSERT_TRUE(waitFor([&] { return w->dashboard()->pointCount(run, QStringLiteral("train/loss")) == 3; }, 120000));
    // The held-out evaluation's point is the run's last message: it may arrive after the losses.
    EXPECT_TRUE(waitFor([&] { return w->dashboard()->pointCount(run, QStringLiteral("eval/exact_match")) >= 1; }, 120000));
    const QString cached = QString::fromStdString(retrained_demo_dir());
    EXPECT_TRUE(demo_model_complete(retrained_demo_dir()));
    // The retrained model opens by its path; "demo" stays the shipped one.
    ASSERT_TRUE(waitFor([&] { return w->modelPath() == cached && w->modelPanel()->hasModel(); }, 120000))
        << w->modelPath().toStdString() << " " << w->lastError().toStdString();
    EXPECT_TRUE(w->modelPanel()->summary().is_demo);
    EXPECT_EQ(inspect_model("demo").path, shipped_demo_dir());
}

TEST_F(WorkbenchTest, LayerFilterAndPerLayerFormatOverride) {
    openDemoModelIn(freshProject(QStringLiteral("override.qlab")));
    const int all = w->modelPanel()->visibleLayerCount();
    w->modelPanel()->setFilter(QStringLiteral("mlp"));
    const int mlp = w->modelPanel()->visibleLayerCount();
    EXPECT_GT(mlp, 0);
    EXPECT_LT(mlp, all);
    w->modelPanel()->setFilter(QString());
    QString layer;
    for (const LayerSummary& l : w->modelPanel()->summary().layers)
        if (l.kind == "linear" && layer.isEmpty()) layer = QString::fromStdString(l.name);
    emit w->modelPanel()->layerFormatRequested(layer, QStringLiteral("fp8_e4m3"));
    EXPECT_TRUE(w->recipeEditor()->recipeJson().contains(layer + QStringLiteral(".weight_quantizer")));
    // The plan runs in the background and the tree shows the override with its bits.
    QString shown;
    const bool updated = waitFor([&] {
        for (QTreeWidgetItemIterator it(w->modelPanel()->tree()); *it; ++it)
            if ((*it)->data(0, Qt::UserRole).toString() == layer) {
                shown = (*it)->text(4) + QStringLiteral(" | ") + (*it)->text(5);
                return (*it)->text(4).contains(QStringLiteral("fp8_e4m3"));
            }
        return false;
    }, 30000);
    ASSERT_TRUE(updated) << layer.toStdString() << ": " << shown.toStdString() << " / "
                         << w->recipeEditor()->findChild<QLabel*>(QStringLiteral("recipeValidation"))->text().toStdString();
}

TEST_F(WorkbenchTest, QuickStartQadRunsLiveAndCancels) {
    const QString project = freshProject(QStringLiteral("qad.qlab"));
    openDemoModelIn(project);
    click(QStringLiteral("quick:NVFP4 QAD"));  // click 1: the preset
    shortTraining(400);
    click(QStringLiteral("startRun"));           // click 2: start; the dashboard comes up by itself
    EXPECT_EQ(window->currentViewId(), QStringLiteral("dashboard"));
    ASSERT_TRUE(waitFor([&] { return w->runner()->runId() > 0; }, 120000));
    const qint64 run = w->runner()->runId();
    ASSERT_TRUE(waitFor([&] { return w->dashboard()->pointCount(run, QStringLiteral("train/loss")) >= 3; }, 120000))
        << w->lastError().toStdString();
    EXPECT_GE(w->dashboard()->pointCount(run, QStringLiteral("train/kl")), 1);
    EXPECT_GE(w->dashboard()->pointCount(run, QStringLiteral("train/lr")), 1);
    EXPECT_FALSE(w->runControls()->progressText().isEmpty());
    // The status bar names where the run computes while it runs (the recipe editor's cpu here).
    auto* device = window->findChild<QLabel*>(QStringLiteral("statusDevice"));
    ASSERT_NE(device, nullptr);
    const int threads = initialise_engine_runtime().threads;
    EXPECT_EQ(device->text(), QStringLiteral("Device: CPU × %1 (running)").arg(threads));
    click(QStringLiteral("cancelRun"));
    ASSERT_TRUE(w->runner()->waitForFinished(120000));
    EXPECT_EQ(runRecord(project, run).status, projects::RunStatus::Cancelled);
    EXPECT_TRUE(w->runControls()->startButton()->isEnabled());
    ASSERT_TRUE(waitFor([&] { return device->text() == QStringLiteral("Device: CPU × %1").arg(threads); }, 10000))
        << device->text().toStdString();
    // A GPU run reads as its device and precision.
    emit w->computeDeviceChanged(QStringLiteral("cuda:0 · BF16"));
    EXPECT_EQ(device->text(), QStringLiteral("Device: cuda:0 · BF16 (running)"));
    emit w->computeDeviceChanged(QString());
    EXPECT_EQ(device->text(), QStringLiteral("Device: CPU × %1").arg(threads));
}

TEST_F(WorkbenchTest, PauseThenResumeContinuesTheSameRunToTheEnd) {
    const QString project = freshProject(QStringLiteral("pause.qlab"));
    openDemoModelIn(project);
    w->recipeEditor()->applyQuickStart(QStringLiteral("NVFP4 QAT"));
    shortTraining(60);
    ASSERT_TRUE(w->startRun());
    ASSERT_TRUE(waitFor([&] { return w->runner()->runId() > 0; }, 120000));
    const qint64 run = w->runner()->runId();
    ASSERT_TRUE(waitFor([&] { return w->dashboard()->pointCount(run, QStringLiteral("train/loss")) >= 2; }, 120000));
    click(QStringLiteral("pauseRun"));
    ASSERT_TRUE(w->runner()->waitForFinished(120000));
    ASSERT_EQ(runRecord(project, run).status, projects::RunStatus::Cancelled);
    w->explorer()->selectRuns({run});
    ASSERT_TRUE(waitFor([&] { return w->runControls()->resumeButton()->isEnabled(); }, 120000));
    click(QStringLiteral("resumeRun"));
    ASSERT_TRUE(w->runner()->waitForFinished(180000));
    EXPECT_EQ(w->runner()->runId(), run);
    const projects::RunRecord r = runRecord(project, run);
    EXPECT_EQ(r.status, projects::RunStatus::Completed) << r.message;
    const auto loss = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly).load_series(run, "train/loss");
    // Steps 0 … 59, each once: the resumed part continued the series, it did not restart it.
    ASSERT_EQ(loss.size(), 60u);
    EXPECT_EQ(loss.steps.front(), 0);
    EXPECT_EQ(loss.steps.back(), 59);
}

TEST_F(WorkbenchTest, ComparesTwoPtqRunsAndHighlightsTheBest) {
    const QString project = freshProject(QStringLiteral("compare.qlab"));
    openDemoModelIn(project);
    QList<qint64> runs;
    for (const QString& quick : {QStringLiteral("NVFP4 PTQ"), QStringLiteral("FP8 PTQ")}) {
        w->recipeEditor()->applyQuickStart(quick);
        ASSERT_TRUE(w->startRun()) << w->lastError().toStdString();
        ASSERT_TRUE(w->runner()->waitForFinished(180000));
        ASSERT_EQ(runRecord(project, w->runner()->runId()).status, projects::RunStatus::Completed)
            << runRecord(project, w->runner()->runId()).message;
        runs << w->runner()->runId();
    }
    ASSERT_TRUE(waitFor([&] { return w->explorer()->runs().size() == 2; }, 120000));
    w->explorer()->selectRuns(runs);
    window->showView(QStringLiteral("compare"));
    QTableWidget* table = w->compareView()->table();
    ASSERT_TRUE(waitFor([&] { return table->rowCount() == 2 && table->columnCount() > 4; }, 120000));
    // Both runs have accuracy, KL and size; the FP8 run is the larger one.
    const int best = w->compareView()->bestRow(QStringLiteral("model/bits_per_parameter"));
    ASSERT_GE(best, 0);
    EXPECT_TRUE(table->item(best, 0)->text().contains(QStringLiteral("NVFP4")));
    bool boldFound = false;
    for (int c = 2; c < table->columnCount(); ++c) boldFound = boldFound || table->item(best, c)->font().bold();
    EXPECT_TRUE(boldFound);
    w->compareView()->setChartMetric(QStringLiteral("eval/kl"));
    EXPECT_EQ(w->compareView()->chart()->customPlot()->plottableCount() > 0, true);
}

TEST_F(WorkbenchTest, WatchesARunThatQuantlabCliWritesInAnotherProcess) {
    const QString project = freshProject(QStringLiteral("watch.qlab"));
    const QString out = QDir(test::scratchDir()).filePath(QStringLiteral("watch-out"));
    QProcess cli;
    cli.setProcessChannelMode(QProcess::MergedChannels);
    cli.start(QStringLiteral(QUANTLAB_CLI),
              {QStringLiteral("train"), QStringLiteral("qad"), QStringLiteral("demo"), QStringLiteral("--recipe"),
               QStringLiteral("NVFP4_DEFAULT"), QStringLiteral("--data"), QStringLiteral("synthetic:arith"),
               QStringLiteral("--steps"), QStringLiteral("40"), QStringLiteral("--batch-size"), QStringLiteral("8"),
               // Small evaluations and calibration: the test is about watching, not accuracy.
               QStringLiteral("--eval-samples"), QStringLiteral("64"), QStringLiteral("--calib-samples"), QStringLiteral("16"),
               QStringLiteral("--out"), out, QStringLiteral("--force"), QStringLiteral("--project"), project});
    ASSERT_TRUE(cli.waitForStarted(120000));
    ASSERT_TRUE(waitFor([&] { return QFileInfo::exists(project); }, 120000)) << cli.readAll().toStdString();
    ASSERT_TRUE(window->openProject(project));
    ASSERT_TRUE(waitFor([&] { return w->explorer()->runs().size() == 1; }, 120000));
    const qint64 run = w->explorer()->runs().front().id;
    w->explorer()->selectRuns({run});
    ASSERT_TRUE(waitFor([&] { return w->dashboard()->pointCount(run, QStringLiteral("train/loss")) >= 1; }, 240000))
        << cli.readAll().toStdString();
    ASSERT_TRUE(cli.waitForFinished(180000));
    EXPECT_EQ(cli.exitCode(), 0) << cli.readAll().toStdString();
    ASSERT_TRUE(waitFor([&] {
        return !w->explorer()->runs().isEmpty() && w->explorer()->runs().front().status == QLatin1String("completed") &&
               w->dashboard()->pointCount(run, QStringLiteral("train/loss")) >= 40;
    }, 120000));
}

// A model opened without calibration data: the recipe is planned and its fit shown, and the PTQ
// estimate (which needs the data) is skipped rather than thrown out of a Qt callback (that
// terminated the GUI on opening a SmolLM2 checkpoint). GGUF_Q4_K on the tiny Llama's 64-wide rows
// plans llama.cpp's Q5_0 fallback, marked on each layer with the reason in the tooltip.
TEST_F(WorkbenchTest, ARecipeWithoutCalibrationDataIsPlannedAndKThatDoNotFitShowTheirFallback) {
    ASSERT_TRUE(window->openProject(freshProject(QStringLiteral("nocalib.qlab")), true));
    window->openModel(QString::fromStdString(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama"));
    ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 120000)) << w->lastError().toStdString();
    w->recipeEditor()->setCalibration(QString());
    ASSERT_TRUE(w->recipeEditor()->setPreset(QStringLiteral("GGUF_Q4_K")));
    auto* validation = w->recipeEditor()->findChild<QLabel*>(QStringLiteral("recipeValidation"));
    ASSERT_NE(validation, nullptr);
    ASSERT_TRUE(waitFor([&] { return validation->text().contains(QStringLiteral("The recipe fits the model")); }, 120000))
        << validation->text().toStdString();
    QTest::qWait(500);  // the estimate's turn, had it run
    int fallbacks = 0;
    for (QTreeWidgetItemIterator it(w->modelPanel()->tree()); *it; ++it) {
        if (!(*it)->text(4).endsWith(QStringLiteral("(fallback)"))) continue;
        ++fallbacks;
        EXPECT_TRUE((*it)->text(4).startsWith(QStringLiteral("gguf_q5_0"))) << (*it)->text(4).toStdString();
        EXPECT_TRUE((*it)->toolTip(4).contains(QStringLiteral("llama.cpp's fallback for gguf_q4_k"))) << (*it)->toolTip(4).toStdString();
    }
    EXPECT_EQ(fallbacks, 14);
}

TEST_F(WorkbenchTest, BadProjectFileAndBadModelFolderGiveMessagesNotCrashes) {
    const QString junk = QDir(test::scratchDir()).filePath(QStringLiteral("junk.qlab"));
    QFile f(junk);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("this is not a project file");
    f.close();
    EXPECT_FALSE(window->openProject(junk));
    EXPECT_TRUE(w->lastError().contains(QStringLiteral("junk.qlab"))) << w->lastError().toStdString();
    EXPECT_TRUE(w->logPanel()->text().contains(QStringLiteral("junk.qlab")));

    ASSERT_TRUE(window->openProject(freshProject(QStringLiteral("badmodel.qlab")), true));
    const QString empty = QDir(test::scratchDir()).filePath(QStringLiteral("empty-model"));
    QDir().mkpath(empty);
    window->openModel(empty);
    ASSERT_TRUE(waitFor([&] { return w->lastError().contains(QStringLiteral("empty-model")); }, 120000)) << w->lastError().toStdString();
    EXPECT_FALSE(w->modelPanel()->hasModel());
    EXPECT_FALSE(w->runControls()->startButton()->isEnabled());
}

}  // namespace
}  // namespace ql
