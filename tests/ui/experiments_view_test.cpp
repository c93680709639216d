// SPDX-License-Identifier: GPL-3.0-or-later
// The Experiments view driven offscreen: a template's planned runs, a tiny real experiment (PTQ
// of the shipped demo with two recipes × two replicates into a private project) made on the
// view's worker thread, its plots holding exactly the engine's statistics, a click on a frontier
// point selecting that run and exporting its plan unchanged, Stop after the current run and
// Start resuming without repeating a finished run.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTableWidget>
#include <QTimer>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "wait_for.h"
#include "plots/interval_plot.h"
#include "projects/experiment_report.h"
#include "projects/project_file.h"
#include "engine/api/export_api.h"
#include "tests/peer_paths.h"
#include "ui/experiment_result_panel.h"
#include "ui/experiments_view.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

#include <qcustomplot.h>

namespace ql {
namespace {

using nlohmann::json;
using test::waitFor;

// Two PTQ recipes of different widths on the demo: two cells, so a frontier and a comparison.
const char* kTinyExperiment = R"json({
  "quantlab_experiment": 1,
  "name": "ui-tiny",
  "title": "NVFP4 against MXFP4 on the demo (ui test)",
  "analysis": "frontier",
  "replicates": 2,
  "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "eval_samples": 24, "calib_samples": 8},
  "grid": {"recipe": ["NVFP4_DEFAULT", "MXFP8"]},
  "metrics": ["exact_match", "kl", "bits_per_parameter"],
  "comparisons": [{"name": "NVFP4 - MXFP8", "a": {"recipe": "NVFP4_DEFAULT"}, "b": {"recipe": "MXFP8"}}]
})json";

class ExperimentsViewTest : public ::testing::Test {
protected:
    void SetUp() override {
        window = test::makeMainWindow(QStringLiteral("experiments"));
        view = window->experiments();
        ASSERT_NE(view, nullptr);
        project = QDir(test::scratchDir()).filePath(QStringLiteral("experiments.qlab"));
        file = QDir(test::scratchDir()).filePath(QStringLiteral("ui-tiny.json"));
        QFile f(file);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(kTinyExperiment);
    }
    std::unique_ptr<MainWindow> window;
    ExperimentsView* view = nullptr;
    QString project, file;
};

TEST_F(ExperimentsViewTest, ATemplateShowsItsPlannedRunsAndTime) {
    ASSERT_TRUE(view->loadExperiment(QStringLiteral("qad-vs-qat"))) << view->lastError().toStdString();
    // method ∈ {ptq, qat, qad} × 3 replicates (the template's).
    EXPECT_EQ(view->plannedRunCount(), 9);
    EXPECT_EQ(view->runTable()->rowCount(), 9);
    EXPECT_EQ(view->runTable()->item(0, 2)->text(), QStringLiteral("ptq"));
    EXPECT_EQ(view->runTable()->item(0, 4)->text(), QStringLiteral("queued"));
    EXPECT_GT(view->estimatedSeconds(), 0.0);
    view->setReplicates(2);
    EXPECT_EQ(view->plannedRunCount(), 6);
    // Replicate-major: the three cells of replicate 0 first.
    EXPECT_EQ(view->runTable()->item(2, 1)->text(), QStringLiteral("0"));
    EXPECT_EQ(view->runTable()->item(3, 1)->text(), QStringLiteral("1"));
    EXPECT_FALSE(view->loadExperiment(QDir(test::scratchDir()).filePath(QStringLiteral("missing.json"))));
    EXPECT_FALSE(view->lastError().isEmpty());
}

// The Data and Pairs fields: the real all-MiniLM-L6-v2 takes a template's encoder form, which
// needs sentences; the fields carry the caller's sentences and scored pairs into every cell, and a
// new experiment resets them with the model.
TEST_F(ExperimentsViewTest, TheDataAndPairsFieldsGiveAnEncoderItsSentences) {
    const std::string pairs = std::string(QUANTLAB_TEST_DATA_DIR) + "/sentences/pairs.tsv";
    const QString sentences = QDir(test::scratchDir()).filePath(QStringLiteral("sentences.txt"));
    {
        std::ifstream in(pairs);
        std::ofstream out(sentences.toStdString());
        int written = 0;
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            out << line.substr(0, line.find('\t')) << '\n';
            ++written;
        }
        ASSERT_GE(written, 40);
    }
    ASSERT_TRUE(view->loadExperiment(QStringLiteral("nvfp4-vs-mxfp4"))) << view->lastError().toStdString();
    const int demoRuns = view->plannedRunCount();
    ASSERT_GT(demoRuns, 0);
    view->setModel(QString::fromStdString(test::minilm_dir()));
    // No sentences yet: nothing is planned and the error says what is missing.
    EXPECT_EQ(view->plannedRunCount(), 0);
    EXPECT_NE(view->lastError().indexOf(QStringLiteral("needs its sentences")), -1) << view->lastError().toStdString();

    view->setData(sentences);
    ASSERT_TRUE(view->lastError().isEmpty()) << view->lastError().toStdString();
    ASSERT_NE(view->spec(), nullptr);
    EXPECT_GT(view->plannedRunCount(), 0);
    for (const auto& cell : view->spec()->cells) {
        EXPECT_EQ(cell.parameters.model, test::minilm_dir());
        EXPECT_EQ(cell.parameters.data, sentences.toStdString());
        EXPECT_EQ(cell.parameters.pairs, "");
    }
    // The encoder form scores embeddings, not exact match.
    const auto& metrics = view->spec()->metrics;
    EXPECT_NE(std::find(metrics.begin(), metrics.end(), "cosine_mean"), metrics.end());
    EXPECT_EQ(std::find(metrics.begin(), metrics.end(), "exact_match"), metrics.end());

    view->setPairs(QString::fromStdString(pairs));
    ASSERT_TRUE(view->lastError().isEmpty()) << view->lastError().toStdString();
    for (const auto& cell : view->spec()->cells) EXPECT_EQ(cell.parameters.pairs, pairs);

    // An encoder does not answer an eval suite: the field's error is shown, nothing is planned.
    view->setSuite(QStringLiteral("default"));
    EXPECT_EQ(view->plannedRunCount(), 0);
    EXPECT_NE(view->lastError().indexOf(QStringLiteral("base.suite")), -1) << view->lastError().toStdString();
    view->setSuite(QString());

    // Another experiment starts from its own model and data again.
    ASSERT_TRUE(view->loadExperiment(QStringLiteral("nvfp4-vs-mxfp4"))) << view->lastError().toStdString();
    EXPECT_EQ(view->plannedRunCount(), demoRuns);
    for (const auto& cell : view->spec()->cells) {
        EXPECT_EQ(cell.parameters.model, "demo");
        EXPECT_EQ(cell.parameters.pairs, "");
        EXPECT_NE(cell.parameters.data, sentences.toStdString());
    }
    // Scored on a separate text, and answering the default suite: as experiment run's
    // --eval-data and --suite, one success metric per category of the suite.
    view->setEvalData(sentences);
    view->setSuite(QStringLiteral("default"));
    ASSERT_TRUE(view->lastError().isEmpty()) << view->lastError().toStdString();
    for (const auto& cell : view->spec()->cells) {
        EXPECT_EQ(cell.parameters.eval_data, sentences.toStdString());
        EXPECT_EQ(cell.parameters.suite, "default");
    }
    const auto& answers = view->spec()->metrics;
    for (const char* m : {"evalsuite/success", "evalsuite/right_to_wrong", "evalsuite/success/facts", "evalsuite/success/json"})
        EXPECT_NE(std::find(answers.begin(), answers.end(), m), answers.end()) << m;
    view->setSuite(QStringLiteral("/nonexistent/suite.jsonl"));
    EXPECT_EQ(view->plannedRunCount(), 0);
    EXPECT_NE(view->lastError().indexOf(QStringLiteral("/nonexistent/suite.jsonl")), -1) << view->lastError().toStdString();
    view->setSuite(QString());
}

TEST_F(ExperimentsViewTest, ARunShowsTheEnginesStatisticsAndAFrontierPointSelectsItsRun) {
    QFile::remove(project);
    view->setProject(project);
    ASSERT_TRUE(view->loadExperiment(file)) << view->lastError().toStdString();
    ASSERT_EQ(view->plannedRunCount(), 4);
    int ticks = 0;
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(20);
    ASSERT_TRUE(view->start());
    EXPECT_TRUE(view->isRunning());
    EXPECT_FALSE(view->start());  // one at a time
    ASSERT_TRUE(view->waitForFinished(900000));
    ASSERT_TRUE(view->lastError().isEmpty()) << view->lastError().toStdString();
    EXPECT_GT(ticks, 0);  // the GUI thread ran while the runs were made
    for (int row = 0; row < 4; ++row)
        EXPECT_TRUE(view->runTable()->item(row, 4)->text().startsWith(QStringLiteral("done (run "))) << row;
    EXPECT_TRUE(view->progressText().startsWith(QStringLiteral("4 done · 0 running · 0 queued"))) << view->progressText().toStdString();

    // The engine's analysis of what the project holds.
    const projects::ProjectFile db = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
    const projects::ExperimentReport report = projects::load_experiment_report(db, projects::find_experiment(db, "ui-tiny"));
    ASSERT_EQ(report.runs.size(), 4u);
    ASSERT_EQ(report.result.cells.size(), 2u);

    ExperimentResultPanel* panel = view->resultPanel();
    ASSERT_TRUE(panel->setMetric(QStringLiteral("kl")));
    const auto cells = panel->cellPlot()->drawnIntervals();
    ASSERT_EQ(cells.size(), 2);
    for (int c = 0; c < 2; ++c) {
        const experiments::MetricSummary* kl = nullptr;
        for (const auto& m : report.result.cells[c].metrics)
            if (m.metric == "kl") kl = &m;
        ASSERT_NE(kl, nullptr);
        ASSERT_EQ(kl->value.n, 2);
        ASSERT_TRUE(std::isfinite(kl->value.ci.low));
        EXPECT_GT(kl->value.mean, 0.0);
        EXPECT_DOUBLE_EQ(cells[c].value, kl->value.mean);
        EXPECT_NEAR(cells[c].low, kl->value.ci.low, 1e-12 * std::abs(kl->value.ci.low) + 1e-15);
        EXPECT_NEAR(cells[c].high, kl->value.ci.high, 1e-12 * std::abs(kl->value.ci.high) + 1e-15);
        EXPECT_LT(cells[c].low, cells[c].high);  // a whisker, not a dot
    }
    // The paired difference NVFP4 − MXFP8 with its interval.
    ASSERT_EQ(report.result.comparisons.size(), 1u);
    const auto diffs = panel->differencePlot()->drawnIntervals();
    ASSERT_EQ(diffs.size(), 1);
    for (const auto& m : report.result.comparisons[0].metrics)
        if (m.metric == "kl") {
            EXPECT_DOUBLE_EQ(diffs[0].value, m.value.mean);
            EXPECT_NEAR(diffs[0].low, m.value.ci.low, 1e-12 * std::abs(m.value.ci.low) + 1e-15);
            EXPECT_NEAR(diffs[0].high, m.value.ci.high, 1e-12 * std::abs(m.value.ci.high) + 1e-15);
        }

    // The frontier: one point per cell at its bits per parameter; MXFP8 has more bits than NVFP4.
    IntervalPlot* frontier = panel->frontierPlot();
    ASSERT_EQ(frontier->pointCount(), 2);
    const QStringList keys = panel->frontierCells();
    ASSERT_EQ(keys.size(), 2);
    const auto points = frontier->drawnIntervals();
    ASSERT_EQ(points.size(), 2);
    for (int i = 0; i < 2; ++i) {
        for (const auto& c : report.result.cells) {
            if (QString::fromStdString(c.cell->key) != keys[i]) continue;
            for (const auto& m : c.metrics)
                if (m.metric == "bits_per_parameter") EXPECT_DOUBLE_EQ(points[i].x, m.value.mean);
        }
    }
    const int mx = keys.indexOf(QStringLiteral("recipe=MXFP8"));
    ASSERT_GE(mx, 0);
    EXPECT_GT(points[mx].x, points[1 - mx].x);
    EXPECT_GT(points[mx].x, 8.0);  // 8 bits + one E8M0 scale per 32 elements
    EXPECT_LT(points[1 - mx].x, 5.0);

    // A click on the MXFP8 point selects that cell's replicate-0 run and shows its recipe.
    ASSERT_TRUE(window->showView(QStringLiteral("experiments")));
    panel->tabs()->setCurrentWidget(frontier);
    test::settle(50);
    const QPointF at = frontier->pointPosition(mx);
    QTest::mouseClick(frontier->customPlot(), Qt::LeftButton, Qt::NoModifier, at.toPoint());
    ASSERT_TRUE(waitFor([&] { return panel->selectedCell() == QStringLiteral("recipe=MXFP8"); }, 5000));
    EXPECT_EQ(frontier->selectedPoint(), mx);
    int64_t expectedRun = 0;
    for (const auto& r : report.runs)
        if (r.cell == "recipe=MXFP8" && r.replicate == 0) expectedRun = r.run_id;
    ASSERT_GT(expectedRun, 0);
    EXPECT_EQ(panel->selectedRunId(), expectedRun);
    const projects::RunRecord run = db.run(expectedRun);
    ASSERT_TRUE(run.recipe_id.has_value());
    const std::string recipe = db.recipe(*run.recipe_id).json;
    EXPECT_EQ(panel->selectedRecipeJson().toStdString(), recipe);
    EXPECT_NE(recipe.find("mxfp8"), std::string::npos) << recipe;
    // The table selects the run's row.
    const QList<QTableWidgetItem*> selected = view->runTable()->selectedItems();
    ASSERT_FALSE(selected.isEmpty());
    EXPECT_EQ(view->runTable()->item(selected.first()->row(), 0)->toolTip(), QStringLiteral("recipe=MXFP8"));
    EXPECT_EQ(view->runTable()->item(selected.first()->row(), 1)->text(), QStringLiteral("0"));

    // Export plan: the recipe byte for byte.
    const QString out = QDir(test::scratchDir()).filePath(QStringLiteral("mxfp8-plan.json"));
    ASSERT_EQ(panel->exportPlan(out), QString());
    QFile exported(out);
    ASSERT_TRUE(exported.open(QIODevice::ReadOnly));
    EXPECT_EQ(exported.readAll().toStdString(), recipe);
    EXPECT_FALSE(panel->exportPlan(QDir(test::scratchDir()).filePath(QStringLiteral("no/such/dir/plan.json"))).isEmpty());
    // Every plan form the engine writes is offered, and written as `recipe export --as` writes it.
    const QList<QPair<QString, QString>> choices = planExportChoices();
    QStringList kinds;
    for (const auto& c : choices) kinds << c.first;
    EXPECT_EQ(kinds, (QStringList{"quantlab", "compressed-tensors", "modelopt", "llama-tensor-types"}));
    const QString modelopt = QDir(test::scratchDir()).filePath(QStringLiteral("mxfp8-modelopt.json"));
    ASSERT_EQ(panel->exportPlan(modelopt, QStringLiteral("modelopt")), QString());
    QFile modeloptFile(modelopt);
    ASSERT_TRUE(modeloptFile.open(QIODevice::ReadOnly));
    EXPECT_EQ(modeloptFile.readAll().toStdString(), export_plan("demo", recipe, "modelopt").text);
    // The MXFP8 recipe quantizes inputs, which llama.cpp does not: that form is refused with the
    // first such layer named, and nothing is written.
    const QString args = QDir(test::scratchDir()).filePath(QStringLiteral("mxfp8.args"));
    const QString refused = panel->exportPlan(args, QStringLiteral("llama-tensor-types"));
    EXPECT_NE(refused.indexOf(QStringLiteral("layer model.layers.0.self_attn.q_proj quantizes its input")), -1)
        << refused.toStdString();
    EXPECT_FALSE(QFileInfo::exists(args));

    // The manifest names the environment and every run's seed.
    const QString manifest = panel->manifestText();
    EXPECT_NE(manifest.indexOf(QStringLiteral("libtorch")), -1) << manifest.toStdString();
    EXPECT_NE(manifest.indexOf(QStringLiteral("recipe=MXFP8 #1 seed 1")), -1) << manifest.toStdString();

    // A third replicate: Stop after the current run, then Start resumes; nothing is made twice.
    view->setReplicates(3);
    ASSERT_EQ(view->plannedRunCount(), 6);
    bool stopped = false;
    QObject::connect(view, &ExperimentsView::experimentFinished, view, [&](bool s, const QString&) { stopped = s; });
    ASSERT_TRUE(view->start());
    // Replicate 2's first run (row 4) starts; Stop now lets it finish and starts no other.
    ASSERT_TRUE(waitFor([&] { return view->runTable()->item(4, 4)->text() == QStringLiteral("running"); }, 600000));
    view->stop();
    ASSERT_TRUE(view->waitForFinished(900000));
    EXPECT_TRUE(stopped);
    const auto count = [&] {
        const projects::ProjectFile now = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
        return projects::load_experiment_report(now, projects::find_experiment(now, "ui-tiny")).runs.size();
    };
    EXPECT_EQ(count(), 5u);  // the run in progress finished, the last one was not started
    ASSERT_TRUE(view->start());
    ASSERT_TRUE(view->waitForFinished(900000));
    EXPECT_EQ(count(), 6u);
    EXPECT_EQ(db.runs().size(), 6u);  // 4 + 1 + 1: the finished runs were not made again
    EXPECT_EQ(view->runTable()->rowCount(), 6);
    EXPECT_TRUE(view->progressText().startsWith(QStringLiteral("6 done"))) << view->progressText().toStdString();
}

// Uniform recipes beside the mixed plans of two menus (the bits-frontier template in small): each
// kind has its own mark and legend entry, every point keeps its whisker and stays clickable to its
// run, and a mixed point shows the search's per-layer plan.
TEST_F(ExperimentsViewTest, TheFrontierMarksUniformRecipesAndMixedPlansApartAndTheirPointsSelectTheirRuns) {
    const QString mixedFile = QDir(test::scratchDir()).filePath(QStringLiteral("ui-mixed.json"));
    const QString mixedProject = QDir(test::scratchDir()).filePath(QStringLiteral("mixed.qlab"));
    QFile::remove(mixedProject);
    {
        QFile f(mixedFile);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(R"json({"quantlab_experiment": 1, "name": "ui-mixed", "analysis": "frontier", "replicates": 1,
          "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "eval_samples": 24, "calib_samples": 16},
          "grid": [{"recipe": ["NVFP4_DEFAULT", "MXFP8"]},
                   {"method": ["mixed"], "bits": [6], "menu": [["NVFP4", "FP8", "BF16"], ["NVFP4", "BF16"]]}],
          "metrics": ["kl", "bits_per_parameter"]})json");
    }
    view->setProject(mixedProject);
    ASSERT_TRUE(view->loadExperiment(mixedFile)) << view->lastError().toStdString();
    ASSERT_EQ(view->plannedRunCount(), 4);
    // The plan names a mixed run's recipe as the search's plan, not the unused base recipe.
    for (int row = 0; row < 4; ++row) {
        const bool mixed = view->runTable()->item(row, 2)->text() == QStringLiteral("mixed");
        EXPECT_EQ(view->runTable()->item(row, 3)->text() == QStringLiteral("plan ≤ 6 bits"), mixed) << row;
    }
    ASSERT_TRUE(view->start()) << view->lastError().toStdString();
    ASSERT_TRUE(view->waitForFinished(900000));
    ASSERT_TRUE(view->lastError().isEmpty()) << view->lastError().toStdString();

    ExperimentResultPanel* panel = view->resultPanel();
    ASSERT_TRUE(panel->setMetric(QStringLiteral("kl")));
    IntervalPlot* frontier = panel->frontierPlot();
    // KL spans decades: its frontier has a log axis (every KL here is positive).
    EXPECT_TRUE(frontier->logScaleDrawn());
    EXPECT_EQ(frontier->customPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    const QStringList groups{QStringLiteral("uniform recipes"), QStringLiteral("mixed: NVFP4+FP8+BF16"),
                             QStringLiteral("mixed: NVFP4+BF16")};
    EXPECT_EQ(frontier->pointGroups(), groups);
    ASSERT_EQ(frontier->pointCount(), 4);
    const QStringList keys = panel->frontierCells();
    ASSERT_EQ(keys.size(), 4);
    std::map<int, int> perGroup;
    for (int i = 0; i < 4; ++i) {
        const int group = frontier->points()[i].group;
        ++perGroup[group];
        if (keys[i].startsWith(QStringLiteral("recipe="))) EXPECT_EQ(group, 0) << keys[i].toStdString();
        else if (keys[i].contains(QStringLiteral("FP8"))) EXPECT_EQ(group, 1) << keys[i].toStdString();
        else EXPECT_EQ(group, 2) << keys[i].toStdString();
    }
    EXPECT_EQ(perGroup, (std::map<int, int>{{0, 2}, {1, 1}, {2, 1}}));
    // A mixed point is labelled with its budget (its menu is its mark's).
    for (int i = 0; i < 4; ++i)
        if (frontier->points()[i].group > 0) EXPECT_EQ(frontier->points()[i].label, QStringLiteral("≤ 6 bits"));
    // One graph per kind, named as its legend entry, with its own scatter shape and its points.
    QCustomPlot* plot = frontier->customPlot();
    std::set<int> shapes;
    for (int k = 0; k < groups.size(); ++k) {
        QCPGraph* marks = nullptr;
        for (int g = 0; g < plot->graphCount(); ++g)
            if (plot->graph(g)->name() == groups[k]) marks = plot->graph(g);
        ASSERT_NE(marks, nullptr) << groups[k].toStdString();
        EXPECT_NE(plot->legend->itemWithPlottable(marks), nullptr) << groups[k].toStdString();
        EXPECT_EQ(marks->dataCount(), perGroup[k]) << groups[k].toStdString();
        shapes.insert(static_cast<int>(marks->scatterStyle().shape()));
    }
    EXPECT_EQ(shapes.size(), 3u);
    EXPECT_TRUE(plot->legend->visible());
    // Every point keeps its whisker, in point order, at the cell's bits per parameter.
    const auto drawn = frontier->drawnIntervals();
    ASSERT_EQ(drawn.size(), 4);
    for (int i = 0; i < 4; ++i) {
        EXPECT_DOUBLE_EQ(drawn[i].x, frontier->points()[i].x);
        EXPECT_DOUBLE_EQ(drawn[i].value, frontier->points()[i].value);
    }

    // A click on the NVFP4+BF16 plan selects its run and shows the search's plan.
    const int mixed = static_cast<int>(std::find_if(keys.begin(), keys.end(), [](const QString& k) {
                                           return k.contains(QStringLiteral("method=mixed")) && !k.contains(QStringLiteral("FP8"));
                                       }) - keys.begin());
    ASSERT_LT(mixed, 4);
    ASSERT_TRUE(window->showView(QStringLiteral("experiments")));
    panel->tabs()->setCurrentWidget(frontier);
    test::settle(50);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, frontier->pointPosition(mixed).toPoint());
    ASSERT_TRUE(waitFor([&] { return panel->selectedCell() == keys[mixed]; }, 5000));
    EXPECT_EQ(frontier->selectedPoint(), mixed);
    const projects::ProjectFile db = projects::ProjectFile::open(mixedProject.toStdString(), projects::OpenMode::ReadOnly);
    const projects::RunRecord run = db.run(panel->selectedRunId());
    EXPECT_EQ(run.kind, "mixed");
    const json plan = json::parse(panel->selectedRecipeJson().toStdString());
    EXPECT_EQ(plan["name"].get<std::string>().rfind("MIXED_6B_NVFP4+BF16", 0), 0u) << plan.dump();
}

// A recipe that misses the model (a BERT FFN pattern on the decoder demo) stops Start before the
// project is touched, with the cell, the recipe and the reason shown where plan errors are.
TEST_F(ExperimentsViewTest, StartRefusesARecipeThatMissesItsModelBeforeAnyRun) {
    const QString badFile = QDir(test::scratchDir()).filePath(QStringLiteral("ui-bad-recipe.json"));
    const QString badProject = QDir(test::scratchDir()).filePath(QStringLiteral("bad-recipe.qlab"));
    QFile::remove(badProject);
    {
        QFile f(badFile);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(R"json({"quantlab_experiment": 1, "name": "ui-bad-recipe", "replicates": 1,
          "base": {"model": "demo", "method": "ptq", "eval_samples": 8, "calib_samples": 8},
          "grid": {"recipe": ["MXFP8", {"name": "INT8_BERT_FFN", "algorithm": "max", "quant_cfg": [
            {"quantizer_name": "*", "enable": false},
            {"quantizer_name": "*intermediate*weight_quantizer", "cfg": {"format": "int8", "granularity": "channel"}}]}]},
          "metrics": ["kl"]})json");
    }
    view->setProject(badProject);
    ASSERT_TRUE(view->loadExperiment(badFile)) << view->lastError().toStdString();  // the plan itself is fine
    ASSERT_EQ(view->plannedRunCount(), 2);
    EXPECT_FALSE(view->start());
    EXPECT_FALSE(view->isRunning());
    const std::string error = view->lastError().toStdString();
    EXPECT_NE(error.find("cell recipe=INT8_BERT_FFN: recipe INT8_BERT_FFN"), std::string::npos) << error;
    EXPECT_NE(error.find("matches no quantizer of the model"), std::string::npos) << error;
    EXPECT_FALSE(QFile::exists(badProject));
}

}  // namespace
}  // namespace ql
