// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/scale_histogram_plot.h"

#include <QFile>
#include <QImage>
#include <QLabel>

#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "plot_grab.h"
#include "plots/plot_export.h"
#include "ui_test_support.h"

namespace ql {
namespace {

QCPBars* barsOfSlot(ScaleHistogramPlot& plot, int slot) {
    int seen = 0;
    for (int i = 0; i < plot.customPlot()->plottableCount(); ++i)
        if (auto* bars = qobject_cast<QCPBars*>(plot.customPlot()->plottable(i))) {
            if (seen++ == slot) return bars;
        }
    return nullptr;
}

TEST(ScaleHistogramPlot, BinIndexTakesTheBinadeExactlyFromTheExponent) {
    for (int k = -40; k <= 40; ++k) EXPECT_EQ(ScaleHistogramPlot::binIndex(std::ldexp(1.0, k)), 8 * k) << k;
    // The 8 E4M3 values of a binade fall in 8 different bins.
    for (int j = 0; j < 8; ++j) {
        EXPECT_EQ(ScaleHistogramPlot::binIndex(1.0 + j / 8.0), j) << j;
        EXPECT_EQ(ScaleHistogramPlot::binIndex(std::ldexp(1.0 + j / 8.0, -7)), j - 56) << j;
    }
    EXPECT_EQ(ScaleHistogramPlot::binIndex(std::nextafter(2.0, 0.0)), 7);
    EXPECT_EQ(ScaleHistogramPlot::binIndex(std::nextafter(1.0, 0.0)), -1);
}

TEST(ScaleHistogramPlot, PowerOfTwoScalesFillExactlyOneBinPerBinade) {
    ScaleHistogramPlot plot;
    // E8M0 scales: 0.25 ×3, 0.5 ×5, 1 ×2, 4 ×1.
    plot.setScales(0, {0.25, 0.5, 0.25, 1, 0.5, 0.5, 4, 0.25, 0.5, 1, 0.5}, "MXFP4 (E8M0)");
    const auto bars = plot.drawnBars(0);
    ASSERT_EQ(bars.size(), 4u);
    const double expectedLog2[] = {-2, -1, 0, 2};
    const double expectedPercent[] = {300.0 / 11, 500.0 / 11, 200.0 / 11, 100.0 / 11};
    for (size_t i = 0; i < bars.size(); ++i) {
        EXPECT_DOUBLE_EQ(bars[i].first, expectedLog2[i]);
        EXPECT_NEAR(bars[i].second, expectedPercent[i], 1e-12);
    }
}

TEST(ScaleHistogramPlot, EachE4M3ValueOfABinadeHasItsOwnBar) {
    ScaleHistogramPlot plot;
    std::vector<double> scales;
    for (int j = 0; j < 8; ++j) scales.push_back(std::ldexp(1.0 + j / 8.0, 3));
    plot.setScales(0, scales, "NVFP4 (E4M3)");
    const auto bars = plot.drawnBars(0);
    ASSERT_EQ(bars.size(), 8u);
    for (int j = 0; j < 8; ++j) {
        EXPECT_DOUBLE_EQ(bars[static_cast<size_t>(j)].first, 3 + j / 8.0);
        EXPECT_DOUBLE_EQ(bars[static_cast<size_t>(j)].second, 12.5);
    }
}

TEST(ScaleHistogramPlot, ScalesWithoutALog2AreCountedNotDrawn) {
    ScaleHistogramPlot plot;
    plot.setScales(1, {0.0, 1.0, NAN, -2.0, INFINITY, 2.0}, "MX");
    EXPECT_EQ(plot.skippedCount(1), 4);
    ASSERT_EQ(plot.drawnBars(1).size(), 2u);
    EXPECT_DOUBLE_EQ(plot.drawnBars(1)[0].second, 50.0);
    EXPECT_TRUE(barsOfSlot(plot, 1)->name().contains("4 zero/NaN not drawn"));
    EXPECT_TRUE(plot.csv().contains("1,MX,,,4,\n"));
}

TEST(ScaleHistogramPlot, TwoSlotsStandSideBySideInEachBin) {
    ScaleHistogramPlot plot;
    plot.setScales(0, {1.125, 1.5}, "E4M3");
    EXPECT_EQ(barsOfSlot(plot, 0)->barsGroup(), nullptr);
    EXPECT_NEAR(barsOfSlot(plot, 0)->width(), 0.85 / 8, 1e-12);
    plot.setScales(1, {1.0, 2.0}, "E8M0", QColor("#123456"));
    QCPBars* first = barsOfSlot(plot, 0);
    QCPBars* second = barsOfSlot(plot, 1);
    ASSERT_NE(first->barsGroup(), nullptr);
    EXPECT_EQ(first->barsGroup(), second->barsGroup());
    EXPECT_DOUBLE_EQ(first->width(), 1.0 / 16);
    EXPECT_EQ(second->brush().color().rgb(), QColor("#123456").rgb());
    plot.clearScales(1);
    EXPECT_TRUE(plot.drawnBars(1).empty());
    EXPECT_EQ(first->barsGroup(), nullptr);
    EXPECT_EQ(plot.customPlot()->legend->itemCount(), 1);
}

TEST(ScaleHistogramPlot, CsvListsOccupiedBinsPerSlot) {
    ScaleHistogramPlot plot;
    plot.setScales(0, {1.0, 1.0, 1.25, 0.5}, "NVFP4, E4M3");
    plot.setScales(1, {0.5}, "MXFP4");
    const QStringList lines = plot.csv().trimmed().split('\n');
    ASSERT_EQ(lines.size(), 1 + 3 + 1);
    EXPECT_EQ(lines[0], "slot,label,log2_lo,log2_hi,count,percent");
    EXPECT_EQ(lines[1], "0,\"NVFP4, E4M3\",-1,-0.875,1,25");
    EXPECT_EQ(lines[2], "0,\"NVFP4, E4M3\",0,0.125,2,50");
    EXPECT_EQ(lines[3], "0,\"NVFP4, E4M3\",0.25,0.375,1,25");
    EXPECT_EQ(lines[4], "1,MXFP4,-1,-0.875,1,100");
}

TEST(ScaleHistogramPlot, CaptionIsShownOnlyWhenSet) {
    ScaleHistogramPlot plot;
    plot.show();
    EXPECT_TRUE(plot.caption().isEmpty());
    plot.setCaption("E8M0 scales are powers of two.");
    EXPECT_EQ(plot.caption(), "E8M0 scales are powers of two.");
    auto* label = plot.findChild<QLabel*>();
    ASSERT_NE(label, nullptr);
    EXPECT_TRUE(label->isVisible());
    plot.setCaption({});
    EXPECT_FALSE(label->isVisible());
}

TEST(ScaleHistogramPlot, SavesPngAndSvg) {
    ScaleHistogramPlot plot;
    plot.resize(640, 320);
    plot.setScales(0, {1.0, 1.5, 3.0}, "a");
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/scales.png").isEmpty());
    EXPECT_FALSE(QImage(dir + "/scales.png").isNull());
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/scales.svg").isEmpty());
    QFile svg(dir + "/scales.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

// RNE onto E4M3 for the normal range the test data stays in (3 mantissa bits).
double roundToE4M3(double s) {
    int e = 0;
    std::frexp(s, &e);
    const double step = std::ldexp(1.0, e - 1 - 3);
    return std::min(448.0, std::nearbyint(s / step) * step);
}

// Scales a 256 × 512 Gaussian weight matrix (std 0.02, rows of varying spread) gets from NVFP4
// (16-element blocks, E4M3 block scale × FP32 global scale) and MXFP4 (32-element blocks, E8M0
// scale by the OCP floor rule), as the multipliers applied to the E2M1 values.
TEST(ScaleHistogramPlot, RealisticNvfp4AndMxfp4ScalesRenderInBothThemes) {
    std::mt19937 rng(11);
    std::normal_distribution<double> normal(0.0, 0.02);
    std::uniform_real_distribution<double> spread(0.5, 2.0);
    const int rows = 256, cols = 512;
    std::vector<double> w(static_cast<size_t>(rows * cols));
    for (int r = 0; r < rows; ++r) {
        const double s = spread(rng);
        for (int c = 0; c < cols; ++c) w[static_cast<size_t>(r * cols + c)] = normal(rng) * s;
    }
    double amax = 0;
    for (double v : w) amax = std::max(amax, std::fabs(v));
    auto blockAmax = [&](size_t start, size_t n) {
        double m = 0;
        for (size_t i = start; i < start + n; ++i) m = std::max(m, std::fabs(w[i]));
        return m;
    };
    const double global = amax / (6 * 448);
    std::vector<double> nvfp4, mxfp4;
    for (size_t b = 0; b < w.size(); b += 16) nvfp4.push_back(roundToE4M3(blockAmax(b, 16) / (6 * global)) * global);
    for (size_t b = 0; b < w.size(); b += 32) {
        int e = 0;
        std::frexp(blockAmax(b, 32), &e);
        mxfp4.push_back(std::ldexp(1.0, (e - 1) - 2));  // 2^(floor(log2 amax) − emax(E2M1) = 2)
    }
    ScaleHistogramPlot plot;
    plot.setTitle("model.layers.11.self_attn.o_proj \u00b7 block scales");
    plot.setScales(0, nvfp4, "NVFP4: E4M3 \u00d7 FP32 scale, 16-element blocks");
    plot.setScales(1, mxfp4, "MXFP4: E8M0 scale, 32-element blocks");
    plot.setCaption(
        "E8M0 scales are powers of two, so a block's largest value lands anywhere from 4 to 8 on the E2M1 "
        "grid (top value 6): it clips, or the top of the grid goes unused. E4M3 scales take 8 steps per "
        "binade and put every block's largest value within about 6% of 6, so its small values keep more "
        "of the grid.");
    test::grabInBothThemes(plot, "scale-histogram", {900, 480});
    test::grabInBothThemes(plot, "scale-histogram-small", {520, 400});
    EXPECT_FALSE(plot.drawnBars(0).empty());
    for (const auto& bar : plot.drawnBars(1)) EXPECT_EQ(bar.first, std::floor(bar.first));
}

}  // namespace
}  // namespace ql
