// SPDX-License-Identifier: GPL-3.0-or-later
// The Evaluation view on the demo model, driven offscreen: the open model is the baseline, a
// quantized run of the project (INT2 weights: answers flip) is evaluated beside it on a demo
// arithmetic suite while the GUI keeps running events; the result shows per-category bars with
// their Wilson intervals side by side, the flips with both outputs, the cost table and the
// checklist; both runs are stored in the project and compared again from there; a flip opens
// the Generate view at its prompt; every table exports as CSV.
#include <QDir>
#include <QFile>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "engine/api/ptq_api.h"
#include "plots/bar_chart.h"
#include "projects/evalsuite_records.h"
#include "ui/evaluation_view.h"
#include "ui/generate_view.h"
#include "ui/main_window.h"
#include "ui/model_panel.h"
#include "ui/workbench.h"
#include "ui_test_support.h"
#include "wait_for.h"

namespace ql {
namespace {

using test::waitFor;

// Demo problems (digits least significant first): a + b and a * b with their answers.
QString writeDemoSuite(const QString& path) {
    std::ofstream out(path.toStdString());
    for (int i = 0; i < 12; ++i) {
        const int a = 17 + 71 * i, b = 5 + 37 * i;
        auto digits = [](int v, int n) {
            std::string s;
            for (int k = 0; k < n; ++k, v /= 10) s += static_cast<char>('0' + v % 10);
            return s;
        };
        out << "{\"id\": \"add-" << i << "\", \"category\": \"add\", \"prompt\": \"" << digits(a, 3) << "+" << digits(b, 3)
            << "=\", \"max_tokens\": 6, \"check\": {\"type\": \"exact\", \"answer\": \"" << digits(a + b, 4) << "\"}}\n";
        const int m = 3 + i % 7;
        out << "{\"id\": \"mul-" << i << "\", \"category\": \"mul\", \"prompt\": \"" << digits(a, 3) << "*" << digits(m * 111, 3)
            << "=\", \"max_tokens\": 6, \"check\": {\"type\": \"exact\", \"answer\": \"" << digits(a * m, 4) << "\"}}\n";
    }
    return path;
}

TEST(EvaluationViewTest, TheDemoAndAnInt2RunAreJudgedStoredComparedAndAFlipOpensGenerate) {
    auto window = test::makeMainWindow();
    Workbench* w = window->workbench();
    const QDir scratch(test::scratchDir());
    const QString project = scratch.filePath(QStringLiteral("evaluation.qlab"));
    QFile::remove(project);
    ASSERT_TRUE(window->openProject(project, true));
    window->openModel(QStringLiteral("demo"));
    ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 60000));
    ASSERT_TRUE(window->showView(QStringLiteral("evaluation")));
    EvaluationView* view = window->evaluationView();
    ASSERT_NE(view, nullptr);
    EXPECT_TRUE(view->findChild<QPushButton*>(QStringLiteral("evaluationRun"))->isEnabled());
    EXPECT_EQ(view->storedRunCount(), 0);

    // A harsh quantization of the demo: INT2 weights in groups of 64, round to nearest.
    const QString recipe = scratch.filePath(QStringLiteral("int2.json"));
    std::ofstream(recipe.toStdString())
        << R"({"name": "INT2_G64", "algorithm": "max", "quant_cfg": [{"quantizer_name": "*", "enable": false},
              {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int2", "granularity": "group", "group_size": 64}},
              {"quantizer_name": "*lm_head*", "enable": false}]})";
    const QString q = scratch.filePath(QStringLiteral("evaluation-int2"));
    PtqRequest req;
    req.model = "demo";
    req.recipe = recipe.toStdString();
    req.calibration = "synthetic:arith";
    req.samples = 8;
    req.out_dir = q.toStdString();
    req.force = true;
    NullJobSink sink;
    run_ptq(req, sink, CancellationToken{});
    view->setCandidates({{QStringLiteral("INT2 demo"), q}});
    ASSERT_TRUE(view->checkCandidate(q));

    view->setSuite(writeDemoSuite(scratch.filePath(QStringLiteral("demo-suite.jsonl"))));
    view->setMaxTokens(8);
    ASSERT_TRUE(view->run());
    EXPECT_TRUE(view->isRunning());
    EXPECT_TRUE(view->findChild<QPushButton*>(QStringLiteral("evaluationStop"))->isEnabled());
    ASSERT_TRUE(waitFor([&] { return !view->isRunning(); }, 180000)) << view->statusText().toStdString();
    ASSERT_TRUE(view->hasResult()) << view->statusText().toStdString();
    EXPECT_TRUE(view->statusText().startsWith(QStringLiteral("Done"))) << view->statusText().toStdString();
    const EvalSuiteResult& r = view->result();
    ASSERT_EQ(r.runs.size(), 2u);
    EXPECT_EQ(r.runs[0].manifest.label, "demo");
    EXPECT_EQ(r.runs[1].manifest.label, "INT2 demo");

    // Bars: add, mul and overall for both models, with the Wilson intervals as whiskers.
    BarChart* chart = view->successChart();
    EXPECT_EQ(chart->categoryCount(), 3);
    const auto intervals = chart->groupedIntervals();
    ASSERT_EQ(intervals.size(), 2);
    const evaluation::RateInterval& overall = r.tables.stats.summaries[1].overall;
    EXPECT_NEAR(intervals[1][2].first, 100.0 * overall.ci.low, 1e-9);
    EXPECT_NEAR(intervals[1][2].second, 100.0 * overall.ci.high, 1e-9);
    EXPECT_TRUE(chart->csv().startsWith(QStringLiteral("category,demo,demo low,demo high,INT2 demo,")));

    // Flips: every item whose verdict differs, both outputs in the row.
    int flips = 0;
    for (size_t i = 0; i < r.runs[0].replicates[0].items.size(); ++i)
        flips += r.runs[0].replicates[0].items[i].passed != r.runs[1].replicates[0].items[i].passed;
    ASSERT_GT(flips, 0) << "INT2 weights changed no verdict";
    const QList<QStringList> rows = view->tableRows(QStringLiteral("Flips"));
    ASSERT_EQ(rows.size(), flips);
    const evaluation::FlipRow f = r.tables.flips.front();  // a copy: comparing again below replaces the result
    EXPECT_EQ(rows[0][1], QString::fromStdString(f.id));
    EXPECT_EQ(rows[0][4], QString::fromStdString(f.baseline_output));
    EXPECT_EQ(rows[0][5], QString::fromStdString(f.model_output));

    // Cost: weights in the packed layout, smaller for INT2; the H200 estimate.
    const QList<QStringList> cost = view->tableRows(QStringLiteral("Cost"));
    ASSERT_EQ(cost.size(), 2);
    EXPECT_EQ(cost[1][1], QStringLiteral("INT2_G64"));
    EXPECT_LT(r.runs[1].cost.weights.bytes(), r.runs[0].cost.weights.bytes());
    EXPECT_FALSE(cost[1][9].isEmpty());
    const QList<QStringList> checklist = view->tableRows(QStringLiteral("Checklist"));
    ASSERT_EQ(checklist.size(), 10);
    EXPECT_TRUE(checklist[2][0].startsWith(QStringLiteral("☑ task success per category")));
    EXPECT_TRUE(checklist[3][0].startsWith(QStringLiteral("☐ schema validity")));  // the demo suite has no JSON items

    // Stored in the project, one run per model, and compared again from there.
    const std::vector<projects::StoredEvalsuiteRun> stored = projects::stored_evalsuite_runs(project.toStdString());
    ASSERT_EQ(stored.size(), 2u);
    ASSERT_TRUE(waitFor([&] { return view->storedRunCount() == 2; }, 10000));
    ASSERT_TRUE(view->checkStoredRun(stored[0].run_id));
    ASSERT_TRUE(view->checkStoredRun(stored[1].run_id));
    ASSERT_TRUE(view->compareStored()) << view->statusText().toStdString();
    EXPECT_EQ(view->tableRows(QStringLiteral("Flips")).size(), flips);

    // Every table as CSV.
    const QStringList csv = view->exportCsv(scratch.filePath(QStringLiteral("evaluation-csv")));
    EXPECT_GE(csv.size(), 12);
    EXPECT_TRUE(QFile::exists(scratch.filePath(QStringLiteral("evaluation-csv/flip_outputs.csv"))));

    // A flip opens the Generate view at its prompt, the flipped model ticked.
    ASSERT_TRUE(view->openFlip(0));
    EXPECT_EQ(window->currentViewId(), QStringLiteral("generate"));
    GenerateView* generate = window->generateView();
    EXPECT_EQ(generate->findChild<QPlainTextEdit*>(QStringLiteral("generatePrompt"))->toPlainText(), QString::fromStdString(f.user_text));
}

}  // namespace
}  // namespace ql
