// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/number_line_plot.h"

#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>

#include "plots/plot_export.h"
#include "plots/symlog_ticker.h"
#include "ui_test_support.h"

namespace ql {
namespace {

std::vector<double> e2m1() { return {-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6}; }

TEST(SymLogTransform, IsOddMonotoneAndInvertible) {
    const SymLogTransform t(std::ldexp(1.0, -9));
    double previous = -INFINITY;
    for (double x : {-448.0, -1.0, -0.001953125, 0.0, 0.001953125, 0.5, 448.0}) {
        const double y = t.forward(x);
        EXPECT_GT(y, previous);
        previous = y;
        EXPECT_NEAR(t.inverse(y), x, 1e-12 * std::max(1.0, std::fabs(x)));
        EXPECT_DOUBLE_EQ(t.forward(-x), -y);
    }
    EXPECT_DOUBLE_EQ(t.forward(std::ldexp(1.0, -9)), 1.0);
}

TEST(SymLogTicker, LabelsPowersOfTwoInOriginalUnits) {
    const SymLogTransform t(std::ldexp(1.0, -9));
    SymLogTicker ticker(t);
    ticker.setTickCount(40);
    QVector<double> ticks;
    QVector<QString> labels;
    ticker.generate(QCPRange(t.forward(-448), t.forward(448)), QLocale::c(), 'g', 6, ticks, nullptr, &labels);
    ASSERT_EQ(ticks.size(), labels.size());
    EXPECT_TRUE(labels.contains("0"));
    EXPECT_TRUE(labels.contains("256"));
    EXPECT_TRUE(labels.contains(QString::fromUtf8("2\u207b\u2079")));   // 2^-9
    EXPECT_TRUE(labels.contains(QString::fromUtf8("\u22121")));
    for (int i = 1; i < ticks.size(); ++i) EXPECT_LT(ticks[i - 1], ticks[i]);
}

TEST(NumberLinePlot, HoldsExactlyTheGridItWasGiven) {
    NumberLinePlot plot;
    plot.setGrid(e2m1(), std::vector<int>(15, 0), {"value"});
    EXPECT_EQ(plot.gridPointCount(), 15);
    plot.setScale(NumberLinePlot::Scale::SymLog);
    EXPECT_EQ(plot.gridPointCount(), 15);
    plot.setGrid({});
    EXPECT_EQ(plot.gridPointCount(), 0);
}

TEST(NumberLinePlot, CsvListsGridInputsAndOutputs) {
    NumberLinePlot plot;
    plot.setGrid(e2m1());
    plot.setSamples({0.3, 5.5}, {0.5, 6});
    const QStringList lines = plot.toCsv().trimmed().split('\n');
    ASSERT_EQ(lines.size(), 1 + 15 + 2 + 2);
    EXPECT_EQ(lines[0], "series,index,value");
    EXPECT_EQ(lines[1], "grid:value,0,-6");
    EXPECT_EQ(lines[16], "input,0,0.3");
    EXPECT_EQ(lines[19], "output,1,6");
    EXPECT_EQ(plot.samplePointCount(), 2);
}

TEST(NumberLinePlot, ClickOnAStemEmitsItsIndex) {
    NumberLinePlot plot;
    plot.resize(800, 200);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.setGrid(e2m1());
    plot.replot(QCustomPlot::rpImmediateRefresh);
    QSignalSpy spy(&plot, &NumberLinePlot::gridPointClicked);
    const QPoint at = plot.gridPointPosition(13).toPoint();  // value 4
    QTest::mouseClick(&plot, Qt::LeftButton, {}, at);
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), 13);
    EXPECT_EQ(plot.gridIndexAt(at), 13);
}

TEST(PlotExport, WritesNonEmptyPngSvgAndPdf) {
    NumberLinePlot plot;
    plot.resize(640, 180);
    plot.setTitle("E2M1");
    plot.setGrid(e2m1());
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(&plot, dir + "/line.png").isEmpty());
    QImage png(dir + "/line.png");
    EXPECT_EQ(png.width(), 1280);  // rendered at 2x
    EXPECT_EQ(png.height(), 360);
    ASSERT_TRUE(savePlot(&plot, dir + "/line.svg").isEmpty());
    QFile svg(dir + "/line.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
    ASSERT_TRUE(savePlot(&plot, dir + "/line.pdf").isEmpty());
    QFile pdf(dir + "/line.pdf");
    ASSERT_TRUE(pdf.open(QIODevice::ReadOnly));
    EXPECT_TRUE(pdf.read(5).startsWith("%PDF"));
}

TEST(PlotExport, ReportsABadPathReadably) {
    NumberLinePlot plot;
    plot.resize(300, 120);
    EXPECT_TRUE(savePlot(&plot, test::scratchDir() + "/line.bmp").contains(".png"));
    EXPECT_TRUE(savePlot(&plot, "/nonexistent-folder/line.png").contains("Could not write"));
}

}  // namespace
}  // namespace ql
