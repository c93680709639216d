// SPDX-License-Identifier: GPL-3.0-or-later
// The sample block panel: what it shows must be exactly what explain_block computes.
#include "ui/block_walkthrough_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/api/block_walkthrough.h"
#include "plots/number_line_plot.h"
#include "ui/format_explorer_view.h"
#include "ui_test_support.h"

namespace ql {
namespace {

constexpr int kOutputColumn = 4;

BlockWalkthroughPanel* panelFor(MainWindow& window, const QString& format) {
    FormatExplorerView* view = window.formatExplorer();
    EXPECT_TRUE(view->selectFormat(format));
    return view->walkthrough();
}

// The table, the steps and the plot against a direct call of the engine facade.
void expectMatchesEngine(BlockWalkthroughPanel* panel) {
    ASSERT_TRUE(panel->hasResult()) << panel->errorText().toStdString();
    const BlockWalkthrough expected = explain_block(panel->block(), panel->options(), panel->tensorAmax(), panel->searchSubBlock());
    const BlockWalkthrough& shown = panel->result();
    ASSERT_EQ(shown.output.size(), expected.output.size());
    QTableWidget* table = panel->valuesTable();
    ASSERT_EQ(table->rowCount(), static_cast<int>(panel->block().size()));
    for (size_t i = 0; i < expected.output.size(); ++i) {
        EXPECT_EQ(shown.output[i], expected.output[i]) << "element " << i;
        EXPECT_EQ(table->item(static_cast<int>(i), kOutputColumn)->text(), QString::number(expected.output[i], 'g', 6));
        EXPECT_EQ(table->item(static_cast<int>(i), 3)->text().toStdString(), expected.code_bits[i]);
    }
    QTableWidget* steps = panel->stepsTable();
    ASSERT_EQ(steps->rowCount(), static_cast<int>(expected.steps.size()));
    for (int r = 0; r < steps->rowCount(); ++r) {
        EXPECT_EQ(steps->item(r, 0)->text().toStdString(), expected.steps[static_cast<size_t>(r)].label);
        EXPECT_EQ(steps->item(r, 1)->text().toStdString(), expected.steps[static_cast<size_t>(r)].formula);
        EXPECT_EQ(steps->item(r, 2)->text().toStdString(), expected.steps[static_cast<size_t>(r)].result);
    }
    EXPECT_EQ(panel->blockPlot()->samplePointCount(), static_cast<int>(panel->block().size()));
}

TEST(BlockWalkthroughPanel, OutputMatchesExplainBlockForEveryFamily) {
    auto window = test::makeMainWindow();
    for (const char* name : {"fp8_e4m3", "nvfp4", "mxfp4", "mxint8", "int4", "nf4", "gguf_q4_0", "gguf_q4_1", "bf16"}) {
        SCOPED_TRACE(name);
        BlockWalkthroughPanel* panel = panelFor(*window, name);
        panel->generate(SampleKind::WithOutlier, 42);
        expectMatchesEngine(panel);
    }
}

TEST(BlockWalkthroughPanel, SuperBlockFormatsShowSubBlocksAndTheSearchOfTheSelectedOne) {
    auto window = test::makeMainWindow();
    for (const char* name : {"gguf_q4_k", "gguf_q6_k", "gguf_iq4_xs", "gguf_q2_k"}) {
        SCOPED_TRACE(name);
        BlockWalkthroughPanel* panel = panelFor(*window, name);
        panel->generate(SampleKind::WithOutlier, 7);
        EXPECT_EQ(panel->block().size(), 256u);  // one super-block
        expectMatchesEngine(panel);
        const SuperBlockWalkthrough& sb = panel->result().super_block;
        ASSERT_TRUE(sb.present);
        EXPECT_TRUE(panel->superBlockBox()->isVisibleTo(panel));
        QTableWidget* subs = panel->subBlocksTable();
        ASSERT_EQ(subs->rowCount(), static_cast<int>(sb.sub_blocks.size()));
        EXPECT_EQ(subs->item(1, 3)->text(), sb.has_min ? QStringLiteral("%1 / %2").arg(sb.sub_blocks[1].stored_scale).arg(sb.sub_blocks[1].stored_min)
                                                       : QString::number(sb.sub_blocks[1].stored_scale));
        // Selecting an element of sub-block 3 steps through that sub-block's search.
        panel->selectElement(3 * sb.sub_block_length + 1);
        EXPECT_EQ(panel->searchSubBlock(), 3);
        expectMatchesEngine(panel);
        const SuperBlockWalkthrough& now = panel->result().super_block;
        EXPECT_EQ(now.search_sub_block, 3);
        ASSERT_EQ(panel->searchTable()->rowCount(), static_cast<int>(now.search.size()));
        for (int r = 0; r < panel->searchTable()->rowCount(); ++r)
            EXPECT_EQ(panel->searchTable()->item(r, 5)->text() == QStringLiteral("✓"), now.search[static_cast<size_t>(r)].accepted) << r;
        // And the sub-block table selects one directly.
        subs->setCurrentCell(5, 0);
        EXPECT_EQ(panel->searchSubBlock(), 5);
        EXPECT_EQ(panel->result().super_block.search_sub_block, 5);
    }
    // Other formats do not show it.
    BlockWalkthroughPanel* panel = panelFor(*window, "gguf_q4_0");
    EXPECT_FALSE(panel->superBlockBox()->isVisibleTo(panel));
}

TEST(BlockWalkthroughPanel, NvfP4ShowsTheScaleStepsWithRealValues) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "nvfp4");
    EXPECT_EQ(panel->block().size(), 16u);  // the format's block
    panel->setBlock({6.0f, -3.0f, 1.5f, 0.5f});
    ASSERT_TRUE(panel->hasResult());
    QTableWidget* steps = panel->stepsTable();
    QStringList labels;
    for (int r = 0; r < steps->rowCount(); ++r) labels << steps->item(r, 0)->text();
    EXPECT_TRUE(labels.contains("Global scale g"));
    EXPECT_TRUE(labels.contains("E4M3 block scale"));
    // amax 6 = tensor amax: g = 6 / (6 * 448), s = 448 exactly, so every value is representable.
    EXPECT_NEAR(panel->result().global_scale, 6.0 / 2688.0, 1e-9);
    EXPECT_EQ(panel->result().output, (std::vector<float>{6.0f, -3.0f, 1.5f, 0.5f}));
    EXPECT_TRUE(std::isinf(panel->sqnrDb()));
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, AsymmetricChangesInt4Results) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "int4");
    panel->setBlock({0.1f, 0.9f, 1.7f, 2.5f, 3.3f, 4.1f, -0.2f, 5.0f});
    const std::vector<float> symmetric = panel->result().output;
    auto* asym = panel->findChild<QCheckBox*>("asymmetric");
    ASSERT_NE(asym, nullptr);
    ASSERT_TRUE(asym->isVisible());
    QTest::mouseClick(asym, Qt::LeftButton);
    ASSERT_TRUE(panel->options().asymmetric);
    EXPECT_NE(panel->result().output, symmetric);
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, RceilAvoidsTheClippingOfTheFloorRule) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "mxfp4");
    // amax 14. floor: X = 2^(3 − 2) = 2 and 14 / 2 = 7 clips to 6 → 12.
    // rceil: X = 2^ceil(log2(14 / 6)) = 4 and 14 / 4 = 3.5 rounds (ties to even) to 4 → 16.
    panel->setBlock({14.0f, 1.0f, -2.0f, 0.25f});
    ASSERT_TRUE(panel->hasResult());
    EXPECT_EQ(panel->result().output[0], 12.0f);
    auto* rule = panel->findChild<QComboBox*>("mxScaleRule");
    ASSERT_NE(rule, nullptr);
    ASSERT_TRUE(rule->isVisible());
    rule->setFocus();
    QTest::keyClick(rule, Qt::Key_Down);
    ASSERT_EQ(panel->options().mx_scale, "rceil");
    EXPECT_EQ(panel->result().scale, 4.0);
    EXPECT_EQ(panel->result().output[0], 16.0f);
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, DoubleQuantizationAddsItsStep) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "nf4");
    EXPECT_EQ(panel->block().size(), 64u);
    const int before = panel->stepsTable()->rowCount();
    auto* dq = panel->findChild<QCheckBox*>("doubleQuant");
    ASSERT_NE(dq, nullptr);
    QTest::mouseClick(dq, Qt::LeftButton);
    ASSERT_TRUE(panel->options().double_quant);
    EXPECT_EQ(panel->stepsTable()->rowCount(), before + 1);
    EXPECT_EQ(panel->stepsTable()->item(1, 0)->text(), "Double quantization");
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, FixedTensorAmaxChangesTheNvfp4BlockScale) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "nvfp4");
    panel->generate(SampleKind::RandomNormal, 5);
    const double ownScale = panel->result().scale;
    panel->setTensorAmax(100.0f);
    EXPECT_EQ(panel->tensorAmax(), 100.0f);
    EXPECT_NE(panel->result().scale, ownScale);
    EXPECT_NEAR(panel->result().global_scale, 100.0 / 2688.0, 1e-7);
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, GeneratorButtonsDrawNewBlocks) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "mxfp4");
    const std::vector<float> first = panel->block();
    QTest::mouseClick(panel->findChild<QPushButton*>("randomNormalButton"), Qt::LeftButton);
    EXPECT_NE(panel->block(), first);
    EXPECT_EQ(panel->block().size(), 32u);
    QTest::mouseClick(panel->findChild<QPushButton*>("outlierButton"), Qt::LeftButton);
    float amax = 0;
    for (float v : panel->block()) amax = std::max(amax, std::fabs(v));
    EXPECT_GE(amax, 10.0f);
    QTest::mouseClick(panel->findChild<QPushButton*>("tinyButton"), Qt::LeftButton);
    for (float v : panel->block()) EXPECT_LT(std::fabs(v), 0.01f);
    expectMatchesEngine(panel);
    // Ctrl+R is the same as "Random normal".
    const std::vector<float> before = panel->block();
    QTest::keyClick(window.get(), Qt::Key_R, Qt::ControlModifier);
    EXPECT_NE(panel->block(), before);
}

TEST(BlockWalkthroughPanel, EditingACellRequantizes) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "int8");
    panel->setBlock({1.0f, 2.0f, 3.0f});
    QTableWidget* table = panel->valuesTable();
    table->setFocus();
    table->setCurrentCell(1, 0);
    QTest::keyClick(table, Qt::Key_F2);  // edit, as a user would
    QWidget* editor = QApplication::focusWidget();
    ASSERT_NE(editor, nullptr);
    ASSERT_NE(editor, table);
    QTest::keyClick(editor, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(editor, "-12.7");
    QTest::keyClick(editor, Qt::Key_Return);
    test::settle();  // the delegate commits on a queued call
    EXPECT_EQ(panel->block()[1], -12.7f) << panel->errorText().toStdString();
    // scale = 12.7 / 127 = 0.1: 1, 2, 3 are exact multiples of it.
    EXPECT_NEAR(panel->result().scale, 0.1, 1e-7);
    expectMatchesEngine(panel);
}

TEST(BlockWalkthroughPanel, NonNumbersAreReportedNotCrashedOn) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "int8");
    panel->setBlock({1.0f, 2.0f});
    panel->valuesTable()->item(0, 0)->setText("abc");
    EXPECT_TRUE(panel->errorText().contains("'abc' is not a number")) << panel->errorText().toStdString();
    EXPECT_EQ(panel->block()[0], 1.0f);  // unchanged
    panel->valuesTable()->item(0, 0)->setText("0.5");
    EXPECT_TRUE(panel->errorText().isEmpty());
    EXPECT_EQ(panel->block()[0], 0.5f);
}

TEST(BlockWalkthroughPanel, NanInTheBlockIsFlagged) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "mxfp4");
    panel->setBlock({1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f});
    auto* warning = panel->findChild<QLabel*>("warningBanner");
    ASSERT_NE(warning, nullptr);
    EXPECT_FALSE(warning->isHidden());
    EXPECT_TRUE(warning->text().contains("NaN"));
    ASSERT_TRUE(panel->hasResult());
    EXPECT_TRUE(std::isnan(panel->result().output[0]));  // MX: the whole block is NaN
}

TEST(BlockWalkthroughPanel, PasteTakesNumbersFromTheClipboard) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "nvfp4");
    QApplication::clipboard()->setText("0.5, -1.25\n3e-1 nan");
    QTest::mouseClick(panel->findChild<QPushButton*>("pasteButton"), Qt::LeftButton);
    ASSERT_EQ(panel->block().size(), 4u);
    EXPECT_EQ(panel->block()[2], 0.3f);
    EXPECT_TRUE(std::isnan(panel->block()[3]));
    QApplication::clipboard()->setText("1 2 three");
    QTest::mouseClick(panel->findChild<QPushButton*>("pasteButton"), Qt::LeftButton);
    EXPECT_TRUE(panel->errorText().contains("three"));
    EXPECT_EQ(panel->block().size(), 4u);
}

TEST(BlockWalkthroughPanel, EngineErrorsBecomeMessages) {
    auto window = test::makeMainWindow();
    BlockWalkthroughPanel* panel = panelFor(*window, "int4");
    panel->setBlock({});
    EXPECT_FALSE(panel->hasResult());
    EXPECT_FALSE(panel->errorText().isEmpty());
    EXPECT_EQ(panel->valuesTable()->rowCount(), 0);
    EXPECT_EQ(panel->stepsTable()->rowCount(), 0);
}

}  // namespace
}  // namespace ql

namespace ql {
namespace {

// At the smallest window the layouts are made for (1280x800) and at full HD, the summary under the
// sample-block chart gets the lines its text needs and never runs over the chart's axis labels.
TEST(BlockWalkthroughPanel, SummaryLineFitsUnderTheChartFrom1280x800Up) {
    auto window = test::makeMainWindow();
    for (const QSize size : {QSize(1280, 800), QSize(1600, 1000), QSize(1920, 1080)}) {
        window->resize(size);
        BlockWalkthroughPanel* panel = panelFor(*window, QStringLiteral("nvfp4"));
        test::settle(50);
        ASSERT_TRUE(panel->hasResult());
        auto* metrics = panel->findChild<QLabel*>(QStringLiteral("metrics"));
        ASSERT_NE(metrics, nullptr);
        ASSERT_FALSE(metrics->text().isEmpty());
        const QRect chart(panel->blockPlot()->mapTo(panel, QPoint(0, 0)), panel->blockPlot()->size());
        const QRect summary(metrics->mapTo(panel, QPoint(0, 0)), metrics->size());
        EXPECT_FALSE(chart.intersects(summary)) << size.width() << "x" << size.height();
        EXPECT_GE(metrics->height(), metrics->heightForWidth(metrics->width())) << size.width() << "x" << size.height();
    }
}

}  // namespace
}  // namespace ql
