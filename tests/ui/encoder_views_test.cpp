// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI with sentence encoders: the compare view ranks runs by embedding cosine and Spearman,
// the dashboard plots the cosine curves, the recipe editor switches to sentences and eval pairs
// (no QAT), the layer inspector shows the cosine-loss sensitivity, and the workbench opens the
// real all-MiniLM-L6-v2 in encoder mode. Real widgets, offscreen.
#include <QComboBox>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QStandardItemModel>
#include <QTableWidget>

#include <cmath>

#include <gtest/gtest.h>

#include "plots/bar_chart.h"
#include "ui/compare_view.h"
#include "ui/dashboard_view.h"
#include "ui/layer_inspector_view.h"
#include "ui/model_panel.h"
#include "ui/recipe_editor.h"
#include "ui/run_setup.h"
#include "ui/workbench.h"
#include "tests/peer_paths.h"
#include "ui_test_support.h"

namespace ql {
namespace {

RunRow encoderRun(qint64 id, const QString& recipe, double cosine, double spearman) {
    RunRow r;
    r.id = id;
    r.kind = QStringLiteral("ptq");
    r.name = QStringLiteral("PTQ %1").arg(recipe);
    r.recipe = recipe;
    r.status = QStringLiteral("completed");
    r.finals.insert(QStringLiteral("eval/cosine_mean"), cosine);
    r.finals.insert(QStringLiteral("eval/cosine_p5"), cosine - 0.01);
    r.finals.insert(QStringLiteral("eval/spearman"), spearman);
    r.finals.insert(QStringLiteral("eval/teacher_spearman"), 0.862);
    r.finals.insert(QStringLiteral("model/bits_per_parameter"), 4.5);
    return r;
}

QStringList headers(const QTableWidget* t) {
    QStringList h;
    for (int c = 0; c < t->columnCount(); ++c) h << t->horizontalHeaderItem(c)->text();
    return h;
}

TEST(EncoderViews, CompareViewRanksRunsByCosineAndSpearman) {
    CompareView view;
    view.resize(900, 600);
    view.setRuns({encoderRun(1, QStringLiteral("MXFP4"), 0.952, 0.801), encoderRun(2, QStringLiteral("NVFP4_DEFAULT"), 0.981, 0.843),
                  encoderRun(3, QStringLiteral("INT8_SMOOTHQUANT"), 0.978, 0.851)});
    const auto* table = view.findChild<QTableWidget*>(QStringLiteral("compareTable"));
    ASSERT_NE(table, nullptr);
    const QStringList h = headers(table);
    EXPECT_TRUE(h.contains(QStringLiteral("Cosine to FP ↑"))) << h.join(QStringLiteral(", ")).toStdString();
    EXPECT_TRUE(h.contains(QStringLiteral("Spearman ↑")));
    EXPECT_TRUE(h.contains(QStringLiteral("FP Spearman ↑")));
    EXPECT_FALSE(h.contains(QStringLiteral("Exact match ↑")));  // no run has it
    const int cosine = h.indexOf(QStringLiteral("Cosine to FP ↑")), rho = h.indexOf(QStringLiteral("Spearman ↑"));
    EXPECT_EQ(view.bestRow(QStringLiteral("eval/cosine_mean")), 1);  // NVFP4: the largest cosine
    EXPECT_EQ(view.bestRow(QStringLiteral("eval/spearman")), 2);     // SmoothQuant: the best ranking
    EXPECT_TRUE(table->item(1, cosine)->font().bold());
    EXPECT_FALSE(table->item(0, cosine)->font().bold());
    EXPECT_TRUE(table->item(2, rho)->font().bold());
    EXPECT_EQ(table->item(1, cosine)->text(), QStringLiteral("0.981"));
    view.setChartMetric(QStringLiteral("eval/spearman"));
    const auto* chart = view.findChild<BarChart*>(QStringLiteral("compareChart"));
    ASSERT_NE(chart, nullptr);
    EXPECT_EQ(chart->categoryCount(), 3);
    EXPECT_TRUE(chart->higherIsBetter());
}

TEST(EncoderViews, DashboardPlotsTheCosineCurvesOfAQadRun) {
    DashboardView view;
    view.resize(1200, 700);
    view.setRuns({{7, QStringLiteral("QAD NVFP4_DEFAULT")}});
    SeriesChunk train{7, QStringLiteral("train/cosine"), {0, 1, 2, 3}, {0.95, 0.96, 0.965, 0.97}, true};
    SeriesChunk eval{7, QStringLiteral("eval/cosine_mean"), {0, 4}, {0.951, 0.972}, true};
    SeriesChunk rho{7, QStringLiteral("eval/spearman"), {0, 4}, {0.83, 0.85}, true};
    view.addSeries({train, eval, rho});
    EXPECT_EQ(view.pointCount(7, QStringLiteral("train/cosine")), 4);
    EXPECT_EQ(view.pointCount(7, QStringLiteral("eval/cosine_mean")), 2);
    EXPECT_EQ(view.pointCount(7, QStringLiteral("eval/spearman")), 2);
    ASSERT_NE(view.plot(QStringLiteral("eval")), nullptr);
}

TEST(EncoderViews, RecipeEditorSwitchesToSentencesAndPairsAndKeepsContrastiveQat) {
    RecipeEditor editor;
    auto* pairs = editor.findChild<QLineEdit*>(QStringLiteral("evalPairs"));
    ASSERT_NE(pairs, nullptr);
    editor.show();
    test::settle();
    EXPECT_FALSE(pairs->isVisible());
    editor.setMethod(RunSetup::Method::Qat);
    editor.setEncoder(true);
    test::settle();
    EXPECT_TRUE(editor.isEncoder());
    EXPECT_TRUE(pairs->isVisible());
    EXPECT_EQ(editor.method(), RunSetup::Method::Qat);  // an encoder's QAT trains its contrastive loss
    auto* method = editor.findChild<QComboBox*>(QStringLiteral("method"));
    auto* model = qobject_cast<QStandardItemModel*>(method->model());
    ASSERT_NE(model, nullptr);
    QStandardItem* qat = model->item(method->findData(static_cast<int>(RunSetup::Method::Qat)));
    EXPECT_TRUE(qat->isEnabled());
    EXPECT_TRUE(qat->toolTip().contains(QStringLiteral("contrastive loss"))) << qat->toolTip().toStdString();
    editor.setCalibration(QStringLiteral("/data/sentences.txt"));
    auto* train = editor.findChild<QLineEdit*>(QStringLiteral("trainData"));
    train->setText(QStringLiteral("/data/sentences.txt"));
    editor.setEvalPairs(QStringLiteral("/data/pairs.tsv"));
    const RunSetup s = editor.setup();
    EXPECT_EQ(s.evalPairs, QStringLiteral("/data/pairs.tsv"));
    EXPECT_EQ(s.calibration, QStringLiteral("/data/sentences.txt"));
    // Stored with the run and read back for resume / re-run.
    EXPECT_EQ(runSetupFromJson(toJson(s)).evalPairs, QStringLiteral("/data/pairs.tsv"));
    // A decoder again: no pairs field, no pairs in the setup, no encoder tooltip.
    editor.setEncoder(false);
    test::settle();
    EXPECT_TRUE(qat->toolTip().isEmpty());
    EXPECT_FALSE(pairs->isVisible());
    EXPECT_TRUE(editor.setup().evalPairs.isEmpty());
}

TEST(EncoderViews, InspectorShowsTheCosineLossSensitivity) {
    LayerInspectorView view;
    view.resize(1200, 800);
    SensitivityReport r;
    r.recipes = {"NVFP4_DEFAULT", "FP8_DEFAULT"};
    r.metric = "cosine_loss";
    for (int i = 0; i < 4; ++i) {
        SensitivityRow row;
        row.layer = "encoder.layer." + std::to_string(i) + ".output.dense";
        row.parameters = 589824;
        row.kl = {std::nan(""), std::nan("")};
        row.cosine_loss = {1e-3 * (i + 1), 1e-5};
        row.loss_delta = {std::nan(""), std::nan("")};
        row.weight_bits = {4.5 * 589824, 8.0 * 589824};
        r.layers.push_back(row);
    }
    view.setSensitivity(r);
    const BarChart* chart = view.sensitivityChart();
    ASSERT_EQ(chart->categoryCount(), 4);
    // The bars are the cosine losses (not the NaN KLs); the largest is layer 3's.
    double largest = 0;
    for (const BarChart::Bar& b : chart->bars()) largest = std::max(largest, b.value);
    EXPECT_DOUBLE_EQ(largest, 4e-3);
    bool note = false;
    for (const QLabel* l : view.findChildren<QLabel*>())
        note = note || l->text().contains(QStringLiteral("Cosine loss 1 − cos(FP, quantized) of the sentence embeddings"));
    EXPECT_TRUE(note);
}

TEST(EncoderViews, WorkbenchOpensTheRealMiniLmAsAnEncoder) {
    auto window = test::makeMainWindow(QStringLiteral("workbench"));
    Workbench* w = window->workbench();
    window->openPath(QString::fromStdString(test::minilm_dir()));
    for (int i = 0; i < 6000 && !w->modelPanel()->hasModel(); ++i) test::settle(20);
    ASSERT_TRUE(w->modelPanel()->hasModel());
    EXPECT_TRUE(w->recipeEditor()->isEncoder());
    EXPECT_TRUE(w->recipeEditor()->findChild<QLineEdit*>(QStringLiteral("evalPairs"))->isVisible());
}

}  // namespace
}  // namespace ql
