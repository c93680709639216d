// SPDX-License-Identifier: GPL-3.0-or-later
// The Format Explorer inside the real main window, driven offscreen.
#include "ui/format_explorer_view.h"

#include <QComboBox>
#include <QLineEdit>
#include <QTest>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include "engine/core/format_catalog.h"
#include "plots/number_line_plot.h"
#include "ui/bit_layout_widget.h"
#include "ui/block_structure_widget.h"
#include "ui/block_walkthrough_panel.h"
#include "ui/format_picker.h"
#include "ui_test_support.h"

namespace ql {
namespace {

TEST(FormatExplorerView, ListsEveryFormatGroupedByFamily) {
    auto window = test::makeMainWindow();
    FormatPicker* picker = window->formatExplorer()->picker();
    EXPECT_EQ(picker->formatNames().size(), static_cast<int>(all_formats().size()));
    QStringList families;
    for (int i = 0; i < picker->tree()->topLevelItemCount(); ++i) families << picker->tree()->topLevelItem(i)->text(0);
    EXPECT_EQ(families.first(), "FP8");
    EXPECT_EQ(families.last(), "Baselines");
    EXPECT_TRUE(families.contains("NVFP4"));
    EXPECT_TRUE(families.contains("GGUF (llama.cpp)"));
}

TEST(FormatExplorerView, EveryFormatShowsItsBitFieldsValuesAndWalkthrough) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    for (const FormatInfo& f : all_formats()) {
        SCOPED_TRACE(f.name);
        ASSERT_TRUE(view->selectFormat(QString::fromStdString(f.name)));
        test::settle(0);
        EXPECT_EQ(view->currentFormat(), QString::fromStdString(f.name));
        // Field widths add up to the element width, and floats show sign/exponent/mantissa.
        const QVector<int> widths = view->bitLayout()->fieldWidths();
        int total = 0;
        for (int w : widths) total += w;
        EXPECT_EQ(total, f.element_bits);
        if (f.element.is_float) {
            EXPECT_EQ(widths, (QVector<int>{1, f.element.exponent_bits, f.element.mantissa_bits}));
        }
        // The number line holds exactly the representable values.
        EXPECT_EQ(view->numberLine()->gridPointCount(), static_cast<int>(f.element_values.size()));
        EXPECT_EQ(view->numberLine()->gridValues(), std::vector<double>(f.element_values.begin(), f.element_values.end()));
        // The sample block was quantized without an error.
        EXPECT_TRUE(view->walkthrough()->hasResult()) << view->walkthrough()->errorText().toStdString();
        EXPECT_TRUE(view->errorText().isEmpty());
        EXPECT_GT(view->walkthrough()->stepsTable()->rowCount(), 0);
        EXPECT_EQ(view->blockStructure()->diagram().elementBits, f.element_bits);
    }
}

TEST(FormatExplorerView, E4M3IsOneFourThreeWithBiasSeven) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    ASSERT_TRUE(view->selectFormat("fp8_e4m3"));
    EXPECT_EQ(view->bitLayout()->fieldWidths(), (QVector<int>{1, 4, 3}));
    EXPECT_EQ(view->bitLayout()->fieldNames(), (QStringList{"sign", "exponent", "mantissa"}));
    EXPECT_TRUE(view->bitLayout()->caption().contains("bias 7"));
    EXPECT_EQ(view->numberLine()->gridPointCount(), 253);
    // The largest value is decoded first.
    EXPECT_EQ(view->bitLayout()->shownBits(), "0 1111 110");
    // FP8 spans 2^-9 .. 448: the automatic scale is symmetric log.
    EXPECT_EQ(view->numberLine()->scale(), NumberLinePlot::Scale::SymLog);
    ASSERT_TRUE(view->selectFormat("int4"));
    EXPECT_EQ(view->numberLine()->scale(), NumberLinePlot::Scale::Linear);
    EXPECT_EQ(view->bitLayout()->fieldWidths(), (QVector<int>{1, 3}));
}

TEST(FormatExplorerView, ClickingAValueOnTheNumberLineDecodesItsBits) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    ASSERT_TRUE(view->selectFormat("nvfp4"));
    NumberLinePlot* line = view->numberLine();
    line->replot(QCustomPlot::rpImmediateRefresh);
    // E2M1 values ascending: index 1 is -4 = 1 11 0.
    QTest::mouseClick(line, Qt::LeftButton, {}, line->gridPointPosition(1).toPoint());
    EXPECT_EQ(line->selectedGridIndex(), 1);
    EXPECT_EQ(view->bitLayout()->shownBits(), "1 11 0");
    EXPECT_TRUE(view->bitLayout()->resultText().endsWith(QString::fromUtf8("= \u22124")));
}

TEST(FormatExplorerView, SelectingASampleRowDecodesItsCode) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    ASSERT_TRUE(view->selectFormat("mxfp4"));
    BlockWalkthroughPanel* panel = view->walkthrough();
    panel->setBlock({0.75f, -1.5f, 3.0f, 6.0f});
    QTableWidget* table = panel->valuesTable();
    table->setCurrentCell(2, 0);
    ASSERT_TRUE(panel->hasResult());
    EXPECT_EQ(view->bitLayout()->shownBits(), QString::fromStdString(panel->result().code_bits[2]));
}

TEST(FormatExplorerView, KeyboardWalksThroughTheFormatList) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    ASSERT_TRUE(view->selectFormat("fp8_e4m3"));
    QTreeWidget* tree = view->picker()->tree();
    tree->setFocus();
    QTest::keyClick(tree, Qt::Key_Down);
    EXPECT_EQ(view->currentFormat(), "fp8_e5m2");
    // Ctrl+PgDown skips the family header to the next format.
    QTest::keyClick(window.get(), Qt::Key_PageDown, Qt::ControlModifier);
    EXPECT_EQ(view->currentFormat(), "nvfp4");
}

TEST(FormatExplorerView, FilterHidesOtherFormatsAndEnterPicksTheFirstMatch) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    QLineEdit* filter = view->picker()->filter();
    QTest::keyClicks(filter, "q5");
    QTest::keyClick(filter, Qt::Key_Return);
    EXPECT_EQ(view->currentFormat(), "gguf_q5_0");
    filter->clear();
}

TEST(FormatExplorerView, ScaleModeComboSwitchesTheNumberLine) {
    auto window = test::makeMainWindow();
    FormatExplorerView* view = window->formatExplorer();
    ASSERT_TRUE(view->selectFormat("int8"));
    auto* combo = view->findChild<QComboBox*>("scaleMode");
    ASSERT_NE(combo, nullptr);
    combo->setCurrentIndex(combo->findText("Symmetric log"));
    EXPECT_EQ(view->scaleMode(), FormatExplorerView::ScaleMode::SymLog);
    EXPECT_EQ(view->numberLine()->scale(), NumberLinePlot::Scale::SymLog);
    EXPECT_EQ(view->numberLine()->gridPointCount(), 255);
    // Ctrl+L toggles back to linear.
    QTest::keyClick(window.get(), Qt::Key_L, Qt::ControlModifier);
    EXPECT_EQ(view->numberLine()->scale(), NumberLinePlot::Scale::Linear);
}

}  // namespace
}  // namespace ql
