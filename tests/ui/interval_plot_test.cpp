// SPDX-License-Identifier: GPL-3.0-or-later
// The frontier plot's two ways of showing spread beyond the metric's interval: horizontal
// whiskers for points whose x varies across replicates (a mixed plan's bits), and a logarithmic
// value axis (KL) that falls back to linear when a value is not positive.
#include "plots/interval_plot.h"

#include <QTest>

#include <gtest/gtest.h>

#include <limits>

#include <qcustomplot.h>

#include "ui_test_support.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

IntervalPlot::Item point(double x, double value, double low, double high, double xLow = kNaN, double xHigh = kNaN) {
    IntervalPlot::Item it;
    it.label = QStringLiteral("p");
    it.x = x;
    it.value = value;
    it.low = low;
    it.high = high;
    it.xLow = xLow;
    it.xHigh = xHigh;
    return it;
}

TEST(IntervalPlot, PointsWithAnIntervalOfXGetHorizontalWhiskers) {
    IntervalPlot plot;
    plot.resize(800, 500);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    // Given out of x order: the plot keeps them sorted by x.
    plot.setPoints({point(6.1, 0.02, 0.015, 0.025, 5.4, 6.8), point(4.5, 0.09, 0.08, 0.10), point(8.5, 0.004, 0.003, 0.005)});
    const auto x = plot.drawnXIntervals();
    ASSERT_EQ(x.size(), 1);  // only the point with an interval of x
    EXPECT_DOUBLE_EQ(x[0].x, 6.1);
    EXPECT_DOUBLE_EQ(x[0].value, 0.02);
    EXPECT_NEAR(x[0].low, 5.4, 1e-12);
    EXPECT_NEAR(x[0].high, 6.8, 1e-12);
    // The value whiskers stay one per point and do not count the horizontal ones.
    const auto y = plot.drawnIntervals();
    ASSERT_EQ(y.size(), 3);
    EXPECT_NEAR(y[1].low, 0.015, 1e-12);
    EXPECT_NEAR(y[1].high, 0.025, 1e-12);
    // The x range holds the whole whisker.
    EXPECT_LE(plot.customPlot()->xAxis->range().lower, 4.5);
    EXPECT_GE(plot.customPlot()->xAxis->range().upper, 8.5);
}

// At equal bits the better point dominates: INT4 g64 and NVFP4 both take 4.69 bits per
// parameter, and only NVFP4 (lower KL) is on the front.
TEST(IntervalPlot, TheFrontSkipsAPointBeatenAtTheSameBits) {
    IntervalPlot plot;
    plot.setPoints({point(4.44, 0.014, kNaN, kNaN), point(4.69, 0.0023, kNaN, kNaN), point(4.69, 0.0002, kNaN, kNaN),
                    point(6.41, 0.00001, kNaN, kNaN)},
                   /*higherIsBetter=*/false);
    EXPECT_EQ(plot.paretoFront(), (QVector<int>{0, 2, 3}));
    // Higher is better: the same rule with the order of values reversed.
    plot.setPoints({point(4.0, 0.90, kNaN, kNaN), point(4.0, 0.95, kNaN, kNaN), point(5.0, 0.97, kNaN, kNaN)}, true);
    EXPECT_EQ(plot.paretoFront(), (QVector<int>{1, 2}));
}

TEST(IntervalPlot, ALogScaleIsDrawnOnlyForPositiveValues) {
    IntervalPlot plot;
    plot.resize(800, 500);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.setLogScale(true);
    plot.setPoints({point(4.5, 0.09, 0.08, 0.10), point(8.5, 0.0004, 0.0003, 0.0005)});
    EXPECT_TRUE(plot.logScaleDrawn());
    QCPAxis* y = plot.customPlot()->yAxis;
    EXPECT_EQ(y->scaleType(), QCPAxis::stLogarithmic);
    EXPECT_LT(y->range().lower, 0.0003);
    EXPECT_GT(y->range().lower, 0.0);
    EXPECT_GT(y->range().upper, 0.10);
    // An interval clipped at 0 (a KL's) keeps the log axis: its whisker runs to the axis' lower
    // edge, a decade below the smallest positive number (here the value 0.0004).
    plot.setPoints({point(4.5, 0.09, 0.08, 0.10), point(8.5, 0.0004, 0.0, 0.0009)});
    EXPECT_TRUE(plot.logScaleDrawn());
    EXPECT_EQ(y->scaleType(), QCPAxis::stLogarithmic);
    const auto drawn = plot.drawnIntervals();
    ASSERT_EQ(drawn.size(), 2);
    EXPECT_NEAR(drawn[1].low, 0.00004, 1e-12);
    EXPECT_NEAR(y->range().lower, 0.00004 / 1.5, 1e-12);
    // A value at or below zero cannot be drawn on a log axis: linear instead.
    plot.setPoints({point(4.5, 0.09, 0.08, 0.10), point(8.5, 0.0, 0.0, 0.0009)});
    EXPECT_FALSE(plot.logScaleDrawn());
    EXPECT_EQ(y->scaleType(), QCPAxis::stLinear);
    // Off again: linear.
    plot.setPoints({point(4.5, 0.09, 0.08, 0.10), point(8.5, 0.0004, 0.0003, 0.0005)});
    plot.setLogScale(false);
    EXPECT_FALSE(plot.logScaleDrawn());
    EXPECT_EQ(y->scaleType(), QCPAxis::stLinear);
}

}  // namespace
}  // namespace ql
