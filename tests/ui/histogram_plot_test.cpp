// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/histogram_plot.h"

#include <QFile>
#include <QImage>
#include <QTest>
#include <QToolTip>

#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <cmath>
#include <random>

#include "plot_grab.h"
#include "plots/plot_export.h"
#include "ui_test_support.h"

namespace ql {
namespace {

HistogramPlot::Histogram histogram(double lo, double hi, std::vector<double> counts, const QString& label = "w") {
    HistogramPlot::Histogram h;
    h.lo = lo;
    h.hi = hi;
    h.counts = std::move(counts);
    h.label = label;
    return h;
}

// E2M1 values times a block scale: NVFP4's grid for a block whose scale is `scale`.
std::vector<double> e2m1Grid(double scale) {
    std::vector<double> grid;
    for (double v : {-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0})
        grid.push_back(v * scale);
    return grid;
}

QCPAbstractItem* itemNamed(QCustomPlot* plot, const QString& name) {
    for (int i = 0; i < plot->itemCount(); ++i)
        if (plot->item(i)->objectName() == name) return plot->item(i);
    return nullptr;
}

QString legendText(QCustomPlot* plot) {
    QStringList names;
    for (int i = 0; i < plot->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
            names << item->plottable()->name();
    return names.join('|');
}

TEST(HistogramPlot, DrawsEachBinAtItsCount) {
    HistogramPlot plot;
    const std::vector<double> counts = {1, 0, 5, 2.5, 7, 0, 3};
    plot.setHistogram(histogram(-1, 1, counts));
    EXPECT_EQ(plot.drawnCounts(), counts);
    EXPECT_TRUE(legendText(plot.customPlot()).contains("w"));
    // Negative and NaN counts are drawn as empty bins; an invalid range clears the histogram.
    plot.setHistogram(histogram(0, 3, {-2, NAN, 4}));
    EXPECT_EQ(plot.drawnCounts(), (std::vector<double>{0, 0, 4}));
    plot.setHistogram(histogram(1, 1, {4, 5}));
    EXPECT_TRUE(plot.drawnCounts().empty());
}

TEST(HistogramPlot, OverlayIsDrawnAndClearedByEmptyCounts) {
    HistogramPlot plot;
    plot.setHistogram(histogram(-1, 1, {1, 2, 3, 4}, "before QAT"));
    plot.setOverlay(histogram(-1, 1, {4, 3, 2, 1}, "after QAT"));
    EXPECT_EQ(plot.drawnOverlayCounts(), (std::vector<double>{4, 3, 2, 1}));
    EXPECT_TRUE(legendText(plot.customPlot()).contains("after QAT"));
    plot.setOverlay({});
    EXPECT_TRUE(plot.drawnOverlayCounts().empty());
    EXPECT_FALSE(legendText(plot.customPlot()).contains("after QAT"));
    EXPECT_EQ(plot.drawnCounts(), (std::vector<double>{1, 2, 3, 4}));
}

TEST(HistogramPlot, DrawsEveryGridValueWhenFewAreInView) {
    HistogramPlot plot;
    plot.setHistogram(histogram(-0.14, 0.14, std::vector<double>(28, 1.0)));
    plot.setGrid(e2m1Grid(0.02), "NVFP4 grid");
    EXPECT_EQ(plot.drawnGridLineCount(), 15);
    EXPECT_EQ(plot.gridStride(), 1);
    EXPECT_TRUE(legendText(plot.customPlot()).contains("NVFP4 grid"));
    EXPECT_FALSE(legendText(plot.customPlot()).contains("every"));
}

TEST(HistogramPlot, ThinsADenseGridToEveryKthValueCountedFromZero) {
    HistogramPlot plot;
    std::vector<double> grid;
    for (int i = -500; i <= 500; ++i) grid.push_back(i);
    plot.setGrid(grid, "grid");
    plot.setXRange(-600, 600);
    // 1001 values in view > 400: k = ceil(1001 / 400) = 3, counted from 0 so ±3j are kept.
    EXPECT_EQ(plot.gridStride(), 3);
    EXPECT_EQ(plot.drawnGridLineCount(), 1 + 2 * 166);
    std::vector<double> drawn;
    for (int i = 0; i < plot.customPlot()->graphCount(); ++i) {
        QCPGraph* g = plot.customPlot()->graph(i);
        if (g->lineStyle() != QCPGraph::lsImpulse) continue;
        for (const QCPGraphData& d : *g->data()) drawn.push_back(d.key);
    }
    ASSERT_EQ(drawn.size(), 333u);
    EXPECT_EQ(drawn.front(), -498);
    EXPECT_EQ(drawn.back(), 498);
    for (double v : drawn) EXPECT_EQ(std::fmod(std::fabs(v), 3.0), 0.0) << v;
    EXPECT_TRUE(legendText(plot.customPlot()).contains("every 3rd"));

    // Zoomed in, 201 values are in view: all drawn, and the legend stops saying "every".
    plot.setXRange(-100, 100);
    EXPECT_EQ(plot.gridStride(), 1);
    EXPECT_EQ(plot.drawnGridLineCount(), 201);
    EXPECT_FALSE(legendText(plot.customPlot()).contains("every"));
}

TEST(HistogramPlot, ClipThresholdsAreDashedLinesAtTheGivenX) {
    HistogramPlot plot;
    plot.setHistogram(histogram(-0.2, 0.2, {1, 2, 3, 4}));
    plot.setClipThresholds(-0.12, 0.1);
    auto* negative = qobject_cast<QCPItemStraightLine*>(itemNamed(plot.customPlot(), "clip-negative"));
    auto* positive = qobject_cast<QCPItemStraightLine*>(itemNamed(plot.customPlot(), "clip-positive"));
    ASSERT_NE(negative, nullptr);
    ASSERT_NE(positive, nullptr);
    EXPECT_TRUE(negative->visible());
    EXPECT_DOUBLE_EQ(negative->point1->coords().x(), -0.12);
    EXPECT_DOUBLE_EQ(negative->point2->coords().x(), -0.12);
    EXPECT_DOUBLE_EQ(positive->point1->coords().x(), 0.1);
    EXPECT_EQ(positive->pen().style(), Qt::DashLine);
    // The shaded region runs from the threshold to the edge of the axis rect.
    auto* shade = qobject_cast<QCPItemRect*>(itemNamed(plot.customPlot(), "clip-shade-positive"));
    ASSERT_NE(shade, nullptr);
    EXPECT_TRUE(shade->visible());
    EXPECT_DOUBLE_EQ(shade->topLeft->coords().x(), 0.1);
    EXPECT_TRUE(legendText(plot.customPlot()).contains("clip -0.12 / 0.1"));

    plot.setClipThresholds(-0.12, 0.12);
    EXPECT_TRUE(legendText(plot.customPlot()).contains(QString::fromUtf8("clip \u00b10.12")));
    plot.clearClipThresholds();
    EXPECT_FALSE(negative->visible());
    EXPECT_FALSE(shade->visible());
    EXPECT_FALSE(legendText(plot.customPlot()).contains("clip"));
}

TEST(HistogramPlot, ClipLabelsMoveOutsideARangeTooNarrowForBoth) {
    HistogramPlot plot;
    plot.resize(800, 400);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.setHistogram(histogram(-150, 150, {1, 2, 30, 2, 1}));
    plot.setClipThresholds(-60, 60);
    plot.customPlot()->replot();
    auto* negative = qobject_cast<QCPItemText*>(itemNamed(plot.customPlot(), "clip-label-negative"));
    auto* positive = qobject_cast<QCPItemText*>(itemNamed(plot.customPlot(), "clip-label-positive"));
    ASSERT_NE(negative, nullptr);
    ASSERT_NE(positive, nullptr);
    // Wide on screen: inside the clip range, each label facing the other.
    EXPECT_TRUE(negative->positionAlignment() & Qt::AlignLeft);
    EXPECT_TRUE(positive->positionAlignment() & Qt::AlignRight);
    // ±1.2 of a ±150 axis is a few pixels: the labels go outside, away from each other.
    plot.setClipThresholds(-1.2, 1.2);
    plot.customPlot()->replot();
    EXPECT_TRUE(negative->positionAlignment() & Qt::AlignRight);
    EXPECT_TRUE(positive->positionAlignment() & Qt::AlignLeft);
    const double gap = plot.customPlot()->xAxis->coordToPixel(1.2) - plot.customPlot()->xAxis->coordToPixel(-1.2);
    EXPECT_LT(gap, 40.0);
}

TEST(HistogramPlot, LogCountDrawsEmptyBinsAtTheAxisFloor) {
    HistogramPlot plot;
    plot.setHistogram(histogram(0, 4, {0, 3, 0, 1000}));
    plot.setOverlay(histogram(0, 4, {2, 0, 0, 1}));
    EXPECT_EQ(plot.drawnCounts(), (std::vector<double>{0, 3, 0, 1000}));
    plot.setLogCount(true);
    EXPECT_TRUE(plot.logCount());
    EXPECT_EQ(plot.customPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    EXPECT_EQ(plot.drawnCounts(), (std::vector<double>{0.5, 3, 0.5, 1000}));
    EXPECT_EQ(plot.drawnOverlayCounts(), (std::vector<double>{2, 0.5, 0.5, 1}));
    EXPECT_DOUBLE_EQ(plot.customPlot()->yAxis->range().lower, HistogramPlot::kLogZeroCount);
    plot.setLogCount(false);
    EXPECT_EQ(plot.customPlot()->yAxis->scaleType(), QCPAxis::stLinear);
    EXPECT_EQ(plot.drawnCounts(), (std::vector<double>{0, 3, 0, 1000}));
    EXPECT_DOUBLE_EQ(plot.customPlot()->yAxis->range().lower, 0.0);
}

TEST(HistogramPlot, OutliersAreMarkedAndIncludedInTheView) {
    HistogramPlot plot;
    plot.setHistogram(histogram(-0.1, 0.1, {1, 2, 2, 1}));
    plot.setOutliers({0.5, -0.4, NAN});
    EXPECT_EQ(plot.drawnOutlierCount(), 2);
    EXPECT_TRUE(legendText(plot.customPlot()).contains("outliers (2)"));
    const QCPRange x = plot.customPlot()->xAxis->range();
    EXPECT_LT(x.lower, -0.4);
    EXPECT_GT(x.upper, 0.5);
    plot.setOutliers({});
    EXPECT_EQ(plot.drawnOutlierCount(), 0);
}

TEST(HistogramPlot, CsvListsBinsGridThresholdsAndOutliers) {
    HistogramPlot plot;
    plot.setHistogram(histogram(-1, 1, {3, 4}, "q_proj, weights"));
    plot.setOverlay(histogram(-1, 1, {5, 6}, "after"));
    plot.setGrid({0.5, -0.5}, "grid");
    plot.setClipThresholds(-0.75, 0.75);
    plot.setOutliers({0.9});
    const QStringList lines = plot.csv().trimmed().split('\n');
    ASSERT_EQ(lines.size(), 1 + 2 + 2 + 2 + 2 + 1);
    EXPECT_EQ(lines[0], "series,label,x,x_end,count");
    EXPECT_EQ(lines[1], "histogram,\"q_proj, weights\",-1,0,3");
    EXPECT_EQ(lines[2], "histogram,\"q_proj, weights\",0,1,4");
    EXPECT_EQ(lines[4], "overlay,after,0,1,6");
    EXPECT_EQ(lines[5], "grid,grid,-0.5,,");
    EXPECT_EQ(lines[7], "clip,negative,-0.75,,");
    EXPECT_EQ(lines[8], "clip,positive,0.75,,");
    EXPECT_EQ(lines[9], "outlier,,0.9,,");
}

TEST(HistogramPlot, HoverNamesTheBinAndItsCount) {
    HistogramPlot plot;
    plot.resize(640, 320);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.setHistogram(histogram(0, 4, {1, 7, 2, 0}, "weights"));
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    QCustomPlot* cp = plot.customPlot();
    const QPoint at(static_cast<int>(cp->xAxis->coordToPixel(1.5)), static_cast<int>(cp->yAxis->coordToPixel(1.0)));
    QTest::mouseMove(cp, at);
    EXPECT_EQ(QToolTip::text(), "weights: [1, 2): 7");
}

TEST(HistogramPlot, SavesPngAndSvg) {
    HistogramPlot plot;
    plot.resize(640, 320);
    plot.setHistogram(histogram(-1, 1, {1, 3, 3, 1}));
    plot.setGrid(e2m1Grid(1.0 / 6), "grid");
    plot.setClipThresholds(-1, 1);
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/histogram.png").isEmpty());
    EXPECT_FALSE(QImage(dir + "/histogram.png").isNull());
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/histogram.svg").isEmpty());
    QFile svg(dir + "/histogram.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

// A layer of Gaussian weights (std 0.03) with a few large values, NVFP4's grid for a block of
// amax 0.12 (E2M1 × 0.02), clip ±0.12, and the same weights after QAT pulled halfway towards
// the grid, drawn over it.
TEST(HistogramPlot, RealisticLayerRendersInBothThemes) {
    std::mt19937 rng(7);
    std::normal_distribution<double> normal(0.0, 0.03);
    std::vector<double> weights(65536);
    for (double& w : weights) w = normal(rng);
    for (double w : {0.151, -0.163, 0.18, 0.135, -0.142}) weights.push_back(w);
    const std::vector<double> grid = e2m1Grid(0.02);
    auto binned = [](const std::vector<double>& values, const QString& label) {
        HistogramPlot::Histogram h;
        h.lo = -0.2;
        h.hi = 0.2;
        h.counts.assign(200, 0.0);
        h.label = label;
        for (double v : values) {
            const int i = static_cast<int>(std::floor((v - h.lo) / (h.hi - h.lo) * 200));
            if (i >= 0 && i < 200) h.counts[static_cast<size_t>(i)] += 1;
        }
        return h;
    };
    std::vector<double> after;
    std::vector<double> outliers;
    for (double w : weights) {
        double nearest = grid.front();
        for (double g : grid)
            if (std::fabs(g - w) < std::fabs(nearest - w)) nearest = g;
        after.push_back(w + 0.5 * (nearest - w));
        if (std::fabs(w) > 0.12) outliers.push_back(w);
    }
    HistogramPlot plot;
    plot.setTitle("model.layers.11.self_attn.o_proj \u00b7 weights \u00b7 NVFP4");
    plot.setAxisLabel("weight value");
    plot.setHistogram(binned(weights, "before QAT"));
    plot.setOverlay(binned(after, "after QAT"));
    plot.setGrid(grid, "NVFP4 values (block amax 0.12)");
    plot.setClipThresholds(-0.12, 0.12);
    plot.setOutliers(outliers);
    test::grabInBothThemes(plot, "histogram");
    plot.setLogCount(true);
    test::grabInBothThemes(plot, "histogram-log");
    test::grabInBothThemes(plot, "histogram-small", {460, 300});

    // A dense grid (FP8 E4M3 per tensor: 253 values) thinned when zoomed out.
    std::vector<double> fp8;
    for (int e = -6; e <= 8; ++e)
        for (int m = 0; m < 8; ++m) {
            const double v = std::ldexp(1.0 + m / 8.0, e);
            if (v <= 448) {
                fp8.push_back(v * 0.12 / 448);
                fp8.push_back(-v * 0.12 / 448);
            }
        }
    plot.setLogCount(false);
    plot.setOverlay({});
    plot.setGrid(fp8, "FP8 E4M3 values");
    test::grabInBothThemes(plot, "histogram-fp8-grid");
}

}  // namespace
}  // namespace ql
