// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/heatmap_plot.h"

#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>

#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <cmath>

#include "plot_grab.h"
#include "plots/plot_export.h"
#include "ui_test_support.h"

namespace ql {
namespace {

QStringList layerNames(int n) {
    const char* projections[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                 "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    QStringList names;
    for (int i = 0; i < n; ++i)
        names << QStringLiteral("model.layers.%1.%2").arg(i / 7 + 10).arg(projections[i % 7]);
    return names;
}

QStringList formatNames() { return {"fp8_e4m3", "mxfp8_e4m3", "int8", "mxfp6_e2m3", "nvfp4", "mxfp4", "int4", "nf4"}; }

// SQNR-like values in dB: higher for wider formats, a little lower for some layers.
std::vector<std::vector<double>> sqnr(int rows, int cols) {
    const double base[] = {31.2, 30.8, 38.5, 24.9, 19.6, 17.1, 18.3, 19.0};
    std::vector<std::vector<double>> v(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            v[static_cast<size_t>(r)][static_cast<size_t>(c)] = base[c % 8] - 0.7 * (r % 5) + 0.13 * r;
    return v;
}

// Shown, laid out, painted.
void show(HeatmapPlot& plot, QSize size = {900, 600}) {
    plot.resize(size);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    test::settle();
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
}

TEST(HeatmapPlot, ClickAtACellCentreEmitsItsRowAndColumn) {
    HeatmapPlot plot;
    plot.setData(layerNames(12), formatNames(), sqnr(12, 8), "SQNR (dB)");
    show(plot);
    QSignalSpy spy(&plot, &HeatmapPlot::cellClicked);
    QCustomPlot* cp = plot.customPlot();
    for (const auto& [row, col] : std::vector<std::pair<int, int>>{{0, 0}, {5, 3}, {11, 7}, {2, 6}}) {
        const QPoint at(static_cast<int>(std::lround(cp->xAxis->coordToPixel(col))),
                        static_cast<int>(std::lround(cp->yAxis->coordToPixel(row))));
        QTest::mouseClick(cp, Qt::LeftButton, {}, at);
        ASSERT_EQ(spy.count(), 1) << row << "," << col;
        EXPECT_EQ(spy.at(0).at(0).toInt(), row);
        EXPECT_EQ(spy.at(0).at(1).toInt(), col);
        EXPECT_EQ(plot.cellCentre(row, col).toPoint(), at);
        spy.clear();
    }
    // Row 0 is at the top.
    EXPECT_LT(plot.cellCentre(0, 0).y(), plot.cellCentre(11, 0).y());
    // Outside the cells nothing is emitted.
    QTest::mouseClick(cp, Qt::LeftButton, {}, QPoint(3, 3));
    EXPECT_EQ(spy.count(), 0);
}

TEST(HeatmapPlot, HoverEmitsTheCellUnderTheMouse) {
    HeatmapPlot plot;
    plot.setData(layerNames(4), formatNames().mid(0, 3), sqnr(4, 3), "SQNR (dB)");
    show(plot, {700, 400});
    QSignalSpy spy(&plot, &HeatmapPlot::cellHovered);
    QTest::mouseMove(plot.customPlot(), plot.cellCentre(2, 1).toPoint());
    ASSERT_GE(spy.count(), 1);
    EXPECT_EQ(spy.last().at(0).toInt(), 2);
    EXPECT_EQ(spy.last().at(1).toInt(), 1);
    // The tooltip names the full layer (the tick shows it without the common prefix).
    EXPECT_TRUE(QToolTip::text().contains("model.layers.10.self_attn.v_proj")) << QToolTip::text().toStdString();
    EXPECT_TRUE(QToolTip::text().contains("mxfp8_e4m3"));
}

TEST(HeatmapPlot, EmptyDataShowsNoCells) {
    HeatmapPlot plot;
    plot.setData({}, {}, {}, "SQNR (dB)");
    show(plot, {400, 300});
    EXPECT_EQ(plot.rowCount(), 0);
    EXPECT_EQ(plot.cellAt(plot.customPlot()->axisRect()->rect().center()), qMakePair(-1, -1));
    EXPECT_EQ(plot.csv(), "\n");
    plot.setSelectedCell(0, 0);
    EXPECT_EQ(plot.selectedRow(), -1);
}

TEST(HeatmapPlot, CellsAreDrawnInTheirGradientColourAndMissingOnesApart) {
    HeatmapPlot plot;
    auto values = sqnr(3, 4);
    values[1][2] = NAN;
    plot.setData(layerNames(3), formatNames().mid(0, 4), values, "SQNR (dB)");
    show(plot, {700, 400});
    const QImage image = plot.customPlot()->toPixmap().toImage();
    const double cellW = std::fabs(plot.cellCentre(0, 1).x() - plot.cellCentre(0, 0).x());
    const double cellH = std::fabs(plot.cellCentre(1, 0).y() - plot.cellCentre(0, 0).y());
    // Pixels a third of the way from the centre to the corner: clear of the value label.
    auto pixel = [&](int r, int c) {
        const QPointF p = plot.cellCentre(r, c) + QPointF(cellW / 3, cellH / 3);
        return image.pixelColor(p.toPoint()).rgb();
    };
    EXPECT_EQ(pixel(0, 0), plot.cellColour(0, 0).rgb());
    EXPECT_EQ(pixel(2, 3), plot.cellColour(2, 3).rgb());
    // The missing cell: the neutral colour (or its hatching), never a gradient colour.
    EXPECT_TRUE(std::isnan(plot.value(1, 2)));
    const QColor missing = plot.cellColour(1, 2);
    int neutral = 0, total = 0;
    const QPointF centre = plot.cellCentre(1, 2);
    for (double dx = -0.4; dx <= 0.4; dx += 0.1)
        for (double dy = -0.4; dy <= 0.4; dy += 0.1) {
            const QColor c = image.pixelColor((centre + QPointF(dx * cellW, dy * cellH)).toPoint());
            ++total;
            neutral += c.rgb() == missing.rgb() ? 1 : 0;
            EXPECT_LT(c.saturation(), 40) << "a gradient colour in the missing cell";
        }
    EXPECT_GT(neutral, total / 2);
}

TEST(HeatmapPlot, GradientPutsBetterValuesAtTheBrightEnd) {
    HeatmapPlot plot;
    plot.setData({"a", "b"}, {"x"}, {{10.0}, {30.0}}, "SQNR (dB)");
    EXPECT_GT(plot.cellColour(1, 0).lightness(), plot.cellColour(0, 0).lightness());
    plot.setHigherIsBetter(false);
    EXPECT_LT(plot.cellColour(1, 0).lightness(), plot.cellColour(0, 0).lightness());
}

TEST(HeatmapPlot, SingleCellFillsTheAxisRect) {
    HeatmapPlot plot;
    plot.setData({"only"}, {"nvfp4"}, {{20.0}}, "SQNR (dB)");
    show(plot, {500, 300});
    const QImage image = plot.customPlot()->toPixmap().toImage();
    const QRect rect = plot.customPlot()->axisRect()->rect();
    for (const QPoint p : {rect.topLeft() + QPoint(4, 4), rect.bottomRight() - QPoint(4, 4)})
        EXPECT_EQ(image.pixelColor(p).rgb(), plot.cellColour(0, 0).rgb());
    EXPECT_EQ(plot.cellAt(rect.center()), qMakePair(0, 0));
}

TEST(HeatmapPlot, ValueLabelsAppearOnlyWhenCellsAreLargeEnough) {
    HeatmapPlot plot;
    plot.setData(layerNames(3), formatNames().mid(0, 2), sqnr(3, 2), "SQNR (dB)");
    show(plot, {700, 400});
    EXPECT_EQ(plot.visibleCellLabelCount(), 6);
    plot.setData(layerNames(300), formatNames(), sqnr(300, 8), "SQNR (dB)");
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    EXPECT_EQ(plot.visibleCellLabelCount(), 0);
}

TEST(HeatmapPlot, RowNamesLoseTheirCommonPrefixAndLongOnesAreElidedInTheMiddle) {
    HeatmapPlot plot;
    QStringList rows = layerNames(3);
    rows << "model.layers.12.block_sparse_moe.experts.7.shared_expert_gate_projection_with_a_very_long_name";
    plot.setData(rows, {"nvfp4"}, {{1.0}, {2.0}, {3.0}, {4.0}}, "SQNR (dB)");
    show(plot, {700, 400});
    EXPECT_EQ(plot.displayedRowLabel(0), "10.self_attn.q_proj");
    EXPECT_EQ(plot.customPlot()->yAxis->label(), QString::fromUtf8("model.layers.\u2026"));
    const QString longLabel = plot.displayedRowLabel(3);
    EXPECT_TRUE(longLabel.contains(QChar(0x2026))) << longLabel.toStdString();
    EXPECT_TRUE(longLabel.startsWith("12.")) << longLabel.toStdString();
    EXPECT_TRUE(longLabel.endsWith("name")) << longLabel.toStdString();
    // Names without a shared dotted prefix are kept whole.
    plot.setData({"embed", "lm_head"}, {"nvfp4"}, {{1.0}, {2.0}}, "SQNR (dB)");
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    EXPECT_EQ(plot.displayedRowLabel(1), "lm_head");
    EXPECT_TRUE(plot.customPlot()->yAxis->label().isEmpty());
}

TEST(HeatmapPlot, SelectedCellIsFramed) {
    HeatmapPlot plot;
    plot.setData(layerNames(4), formatNames().mid(0, 3), sqnr(4, 3), "SQNR (dB)");
    QCPItemRect* frame = nullptr;
    for (int i = 0; i < plot.customPlot()->itemCount(); ++i)
        if (plot.customPlot()->item(i)->objectName() == "selection-frame")
            frame = qobject_cast<QCPItemRect*>(plot.customPlot()->item(i));
    ASSERT_NE(frame, nullptr);
    EXPECT_FALSE(frame->visible());
    plot.setSelectedCell(2, 1);
    EXPECT_TRUE(frame->visible());
    EXPECT_EQ(plot.selectedRow(), 2);
    EXPECT_EQ(plot.selectedColumn(), 1);
    EXPECT_DOUBLE_EQ(frame->topLeft->coords().x(), 0.5);
    EXPECT_DOUBLE_EQ(frame->topLeft->coords().y(), 1.5);
    EXPECT_DOUBLE_EQ(frame->bottomRight->coords().x(), 1.5);
    EXPECT_DOUBLE_EQ(frame->bottomRight->coords().y(), 2.5);
    plot.setSelectedCell(-1, -1);
    EXPECT_FALSE(frame->visible());
    plot.setSelectedCell(9, 0);  // out of range: no frame
    EXPECT_FALSE(frame->visible());
}

TEST(HeatmapPlot, CsvIsAMatrixWithEmptyFieldsForMissingValues) {
    HeatmapPlot plot;
    // A short row is padded with missing values; infinities count as missing.
    plot.setData({"model.layers.0.q_proj", "a,b"}, {"nvfp4", "mxfp4"}, {{19.5, 17.25}, {INFINITY}}, "SQNR (dB)");
    EXPECT_EQ(plot.csv(), ",nvfp4,mxfp4\nmodel.layers.0.q_proj,19.5,17.25\n\"a,b\",,\n");
    EXPECT_TRUE(std::isnan(plot.value(1, 1)));
}

TEST(HeatmapPlot, SavesPngAndSvg) {
    HeatmapPlot plot;
    plot.resize(640, 400);
    plot.setData(layerNames(3), formatNames().mid(0, 3), sqnr(3, 3), "SQNR (dB)");
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/heatmap.png").isEmpty());
    EXPECT_FALSE(QImage(dir + "/heatmap.png").isNull());
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/heatmap.svg").isEmpty());
    QFile svg(dir + "/heatmap.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

TEST(HeatmapPlot, TwelveLayersByEightFormatsRenderInBothThemes) {
    HeatmapPlot plot;
    auto values = sqnr(12, 8);
    values[4][7] = NAN;  // e.g. a format that failed on this layer
    plot.setTitle("SQNR per layer and format");
    plot.setData(layerNames(12), formatNames(), values, "SQNR (dB)");
    plot.setSelectedCell(3, 4);
    test::grabInBothThemes(plot, "heatmap", {900, 560});
    // A narrow window: labels turn, values hide.
    test::grabInBothThemes(plot, "heatmap-narrow", {520, 420});
    // A whole model: 16 decoder layers × 7 projections, one with a very long name.
    QStringList many = layerNames(112);
    many[50] = "model.layers.17.block_sparse_moe.experts.7.shared_expert_gate_projection";
    plot.setData(many, formatNames(), sqnr(112, 8), "SQNR (dB)");
    test::grabInBothThemes(plot, "heatmap-many", {900, 700});
    EXPECT_EQ(plot.visibleCellLabelCount(), 0);
}

}  // namespace
}  // namespace ql
