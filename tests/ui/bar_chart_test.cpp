// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/bar_chart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <qcustomplot.h>

#include "plots/plot_export.h"
#include "plots/plot_style.h"
#include "ui/theme_manager.h"
#include "ui_test_support.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void showChart(BarChart& chart, int w = 800, int h = 420) {
    chart.resize(w, h);
    chart.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&chart));
    chart.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    test::settle(40);
}

QVector<BarChart::Bar> layerBars(int n) {
    // Per-layer sensitivities with realistic long names; deterministic values.
    static const char* kinds[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                  "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    QVector<BarChart::Bar> bars;
    for (int i = 0; i < n; ++i) {
        BarChart::Bar bar;
        bar.label = QStringLiteral("model.layers.%1.%2").arg(i / 7).arg(kinds[i % 7]);
        bar.value = 0.002 + 0.05 * std::fabs(std::sin(1.7 * i + 0.3)) * (i % 7 == 6 ? 3.0 : 1.0);
        bars.push_back(bar);
    }
    return bars;
}

TEST(BarChart, SortsDescendingStablyWithNanLast) {
    BarChart chart;
    chart.setBars({{"a", 1}, {"b", 3}, {"c", kNaN}, {"d", 2}, {"e", 3}}, true);
    QStringList order;
    for (const auto& bar : chart.bars()) order.push_back(bar.label);
    EXPECT_EQ(order, (QStringList{"b", "e", "d", "a", "c"}));
    chart.setBars({{"a", 1}, {"b", 3}}, false);
    EXPECT_EQ(chart.bars()[0].label, "a");
    EXPECT_EQ(chart.categoryCount(), 2);
}

TEST(BarChart, HighlightedBarsAreDrawnInTheAccentColourAndExplainedInTheLegend) {
    BarChart chart;
    chart.setHighlightLabel("kept in BF16");
    chart.setBars({{"layer.0", 1.0}, {"layer.1", 2.0, true}, {"layer.2", 1.5}});
    showChart(chart);
    const PlotStyle style = PlotStyle::fromPalette(chart.palette(), chart.font());
    EXPECT_EQ(chart.barColor(1), style.highlight);
    EXPECT_EQ(chart.barColor(0), style.primary);
    // What is on screen, not only what was asked for.
    const QImage image = chart.customPlot()->grab().toImage();
    const qreal dpr = image.devicePixelRatio();
    auto pixel = [&](int i) {
        const QPointF p = chart.barPosition(i) * dpr;
        return QColor(image.pixel(p.toPoint()));
    };
    EXPECT_EQ(pixel(1), style.highlight);
    EXPECT_EQ(pixel(0), style.primary);
    EXPECT_EQ(pixel(2), style.primary);
    QCPLegend* legend = chart.customPlot()->legend;
    ASSERT_TRUE(legend->visible());
    ASSERT_EQ(legend->itemCount(), 1);
    auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(0));
    ASSERT_NE(item, nullptr);
    EXPECT_EQ(item->plottable()->name(), "kept in BF16");
    // No highlighted bar: no legend to explain.
    chart.setBars({{"layer.0", 1.0}});
    EXPECT_FALSE(legend->visible());
}

TEST(BarChart, ClickOnABarEmitsItsIndexAndLabel) {
    for (const bool horizontal : {false, true}) {
        BarChart chart;
        chart.setHorizontal(horizontal);
        chart.setBars({{"small", 0.01}, {"mid", 0.5}, {"big", 1.0}}, true);
        showChart(chart);
        QSignalSpy byIndex(&chart, qOverload<int>(&BarChart::barClicked));
        QSignalSpy byLabel(&chart, qOverload<const QString&>(&BarChart::barClicked));
        // Sorted: big, mid, small. A tiny bar is clickable anywhere in its column.
        QTest::mouseClick(chart.customPlot(), Qt::LeftButton, {}, chart.barPosition(2).toPoint());
        ASSERT_EQ(byIndex.count(), 1) << "horizontal=" << horizontal;
        EXPECT_EQ(byIndex.at(0).at(0).toInt(), 2);
        EXPECT_EQ(byLabel.at(0).at(0).toString(), "small");
        QTest::mouseClick(chart.customPlot(), Qt::LeftButton, {}, chart.barPosition(0).toPoint());
        ASSERT_EQ(byIndex.count(), 2);
        EXPECT_EQ(byLabel.at(1).at(0).toString(), "big");
        // Between bars: nothing.
        const QPointF gap = (chart.barPosition(0) + chart.barPosition(1)) / 2;
        QTest::mouseClick(chart.customPlot(), Qt::LeftButton, {}, gap.toPoint());
        EXPECT_EQ(byIndex.count(), 2);
    }
}

TEST(BarChart, GroupedBarsMarkTheBestOfEachCategory) {
    BarChart chart;
    // values[group][category]: runs × metrics.
    chart.setGroupedBars({"arc_easy", "piqa"}, {"bf16", "nvfp4"}, {{0.70, 0.60}, {0.80, 0.50}});
    EXPECT_EQ(chart.bestGroup(0), 1);
    EXPECT_EQ(chart.bestGroup(1), 0);
    chart.setHigherIsBetter(false);
    EXPECT_EQ(chart.bestGroup(0), 0);
    EXPECT_EQ(chart.bestGroup(1), 1);
    chart.setHigherIsBetter(true);
    // A tie at the top (every run at 0 %: a category nobody answers) stars nobody; a tie below
    // the top does not matter.
    BarChart tied;
    tied.setGroupedBars({"tool_calls", "facts"}, {"fp32", "fp8", "nvfp4"}, {{0.0, 0.5}, {0.0, 0.4}, {0.0, 0.4}});
    EXPECT_EQ(tied.bestGroup(0), -1);
    EXPECT_EQ(tied.bestGroup(1), 0);
    showChart(chart);
    const PlotStyle style = PlotStyle::fromPalette(chart.palette(), chart.font());
    EXPECT_NE(chart.barColor(0, 0), chart.barColor(0, 1));  // one colour per group
    // The best bar carries the accent outline; the legend says what it means.
    bool outlined = false;
    for (int i = 0; i < chart.customPlot()->plottableCount(); ++i) {
        auto* bars = qobject_cast<QCPBars*>(chart.customPlot()->plottable(i));
        if (bars && bars->pen().color() == style.highlight && !bars->data()->isEmpty()) {
            outlined = true;
            EXPECT_EQ(bars->data()->size(), 1);
        }
    }
    EXPECT_TRUE(outlined);
    EXPECT_EQ(chart.customPlot()->legend->itemCount(), 3);  // bf16, nvfp4, best
    QSignalSpy grouped(&chart, &BarChart::groupedBarClicked);
    QSignalSpy byLabel(&chart, qOverload<const QString&>(&BarChart::barClicked));
    QTest::mouseClick(chart.customPlot(), Qt::LeftButton, {}, chart.barPosition(1, 1).toPoint());
    ASSERT_EQ(grouped.count(), 1);
    EXPECT_EQ(grouped.at(0).at(0).toInt(), 1);
    EXPECT_EQ(grouped.at(0).at(1).toInt(), 1);
    EXPECT_EQ(byLabel.at(0).at(0).toString(), "piqa");
}

TEST(BarChart, LongLabelsAreRotatedOrElidedButNeverClipped) {
    BarChart chart;
    QVector<BarChart::Bar> bars = layerBars(14);
    bars[3].label = "model.layers.0.self_attn.o_proj.with.a.really.long.suffix.that.goes.on";
    chart.setBars(bars);
    showChart(chart, 700, 420);
    QCustomPlot* cp = chart.customPlot();
    EXPECT_EQ(chart.categoryLabelRotation(), -45.0);
    const QStringList shown = chart.shownCategoryLabels();
    ASSERT_FALSE(shown.isEmpty());
    const QFontMetrics fm(cp->xAxis->tickLabelFont());
    int widest = 0;
    for (const QString& s : shown) widest = std::max(widest, fm.horizontalAdvance(s));
    EXPECT_LE(widest, 150);
    EXPECT_TRUE(shown.join(' ').contains(QChar(0x2026)));  // the long one is elided …
    // … and the rotated labels fit under the axis: room below ≥ their diagonal extent.
    const int below = cp->height() - cp->axisRect()->bottom();
    EXPECT_GE(below, static_cast<int>(widest * std::sqrt(0.5)));

    chart.setHorizontal(true);
    cp->replot(QCustomPlot::rpImmediateRefresh);
    cp->replot(QCustomPlot::rpImmediateRefresh);
    EXPECT_EQ(chart.categoryLabelRotation(), 0.0);
    int widestH = 0;
    for (const QString& s : chart.shownCategoryLabels()) widestH = std::max(widestH, fm.horizontalAdvance(s));
    EXPECT_GE(cp->axisRect()->left(), widestH);  // the left margin holds the whole label

    // Short labels that fit stay horizontal.
    chart.setHorizontal(false);
    chart.setBars({{"a", 1}, {"b", 2}});
    cp->replot(QCustomPlot::rpImmediateRefresh);
    EXPECT_EQ(chart.categoryLabelRotation(), 0.0);
    EXPECT_EQ(chart.shownCategoryLabels(), (QStringList{"a", "b"}));
}

TEST(BarChart, ThousandsOfChannelsShowEveryKthLabelAndNameTheTopN) {
    BarChart chart;
    QVector<BarChart::Bar> bars;
    for (int i = 0; i < 2048; ++i) bars.push_back({QString::number(i), 0.1 + 0.01 * (i % 13)});
    bars[100].value = 9;
    bars[1000].value = 7;
    bars[1900].value = 8;
    chart.setBars(bars);
    chart.setLabelTop(3);
    showChart(chart, 900, 400);
    chart.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    const QStringList shown = chart.shownCategoryLabels();
    EXPECT_GT(shown.size(), 3);
    EXPECT_LT(shown.size(), 200);  // thinned: 2048 labels cannot be read
    QStringList named;
    for (int i = 0; i < chart.customPlot()->itemCount(); ++i) {
        auto* text = qobject_cast<QCPItemText*>(chart.customPlot()->item(i));
        if (text && text->visible()) named.push_back(text->text());
    }
    named.sort();
    EXPECT_EQ(named, (QStringList{"100", "1000", "1900"}));
    // The value axis leaves room above the largest bar for its name.
    EXPECT_GT(chart.customPlot()->yAxis->range().upper, 9.0);
}

TEST(BarChart, CsvListsBarsOrGroups) {
    BarChart chart;
    chart.setValueLabel("absmax");
    chart.setBars({{"ch, 0", 1.5, true}, {"ch 1", kNaN}});
    EXPECT_EQ(chart.csv(), "label,absmax,highlighted\n\"ch, 0\",1.5,1\nch 1,nan,0\n");
    chart.setGroupedBars({"arc", "piqa"}, {"bf16", "int4"}, {{0.7, 0.75}, {0.65}});
    EXPECT_EQ(chart.csv(), "category,bf16,int4\narc,0.7,0.65\npiqa,0.75,nan\n");
}

TEST(BarChart, SavesNonEmptyPngAndSvg) {
    BarChart chart;
    chart.resize(640, 320);
    chart.setTitle("Sensitivity");
    chart.setBars(layerBars(10), true);
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(chart.customPlot(), dir + "/bars.png").isEmpty());
    EXPECT_GT(QFileInfo(dir + "/bars.png").size(), 1000);
    EXPECT_FALSE(QImage(dir + "/bars.png").isNull());
    ASSERT_TRUE(savePlot(chart.customPlot(), dir + "/bars.svg").isEmpty());
    QFile svg(dir + "/bars.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

// Renders the sensitivity, outlier and compare layouts in both themes. Set QL_PLOT_SHOT_DIR to
// keep the PNGs for looking at them; the test checks that the theme reached the plot.
TEST(BarChart, FollowsTheLightAndDarkTheme) {
    ThemeManager themes;
    const QString keep = qEnvironmentVariable("QL_PLOT_SHOT_DIR");
    for (const auto theme : {ThemeManager::Theme::Light, ThemeManager::Theme::Dark}) {
        themes.apply(theme);
        const QString suffix = ThemeManager::name(theme);
        BarChart sensitivity;
        sensitivity.setTitle("Layer sensitivity");
        sensitivity.setValueLabel("ΔKL when quantized alone");
        sensitivity.setHighlightLabel("kept in BF16 (mixed precision)");
        QVector<BarChart::Bar> bars = layerBars(21);
        for (int i : {6, 13, 20}) bars[i].highlighted = true;
        sensitivity.setHorizontal(true);
        sensitivity.setBars(bars, true);
        showChart(sensitivity, 760, 520);

        BarChart vertical;
        vertical.setTitle("Layer sensitivity");
        vertical.setValueLabel("ΔKL");
        vertical.setBars(layerBars(14), false);
        showChart(vertical, 760, 420);

        BarChart outliers;
        outliers.setTitle("Per-channel absmax, model.layers.3.mlp.down_proj");
        outliers.setValueLabel("absmax");
        QVector<BarChart::Bar> channels;
        for (int i = 0; i < 1024; ++i)
            channels.push_back({QStringLiteral("ch %1").arg(i), 0.5 + 0.4 * std::fabs(std::sin(0.37 * i))});
        channels[97].value = 14.2;
        channels[611].value = 9.8;
        channels[903].value = 11.5;
        outliers.setBars(channels);
        outliers.setLabelTop(3);
        showChart(outliers, 760, 360);

        BarChart compare;
        compare.setTitle("Zero-shot accuracy");
        compare.setValueLabel("accuracy");
        compare.setGroupedBars({"arc_easy", "hellaswag", "piqa", "winogrande"}, {"bf16", "nvfp4 ptq", "nvfp4 qad"},
                               {{0.742, 0.571, 0.781, 0.661}, {0.701, 0.548, 0.760, 0.641}, {0.735, 0.566, 0.783, 0.655}});
        showChart(compare, 760, 380);

        const PlotStyle style = PlotStyle::fromPalette(sensitivity.palette(), sensitivity.font());
        EXPECT_EQ(style.dark, theme == ThemeManager::Theme::Dark);
        int n = 0;
        for (BarChart* chart : {&sensitivity, &vertical, &outliers, &compare}) {
            const QImage image = chart->grab().toImage();
            ASSERT_FALSE(image.isNull());
            // A corner of the plot is plot background, in the theme's colour.
            const QColor corner = image.pixelColor(image.width() - 3, image.height() - 3);
            EXPECT_EQ(corner.lightness() < 100, theme == ThemeManager::Theme::Dark);
            if (!keep.isEmpty()) {
                QDir().mkpath(keep);
                image.save(QStringLiteral("%1/bars-%2-%3.png").arg(keep).arg(n).arg(suffix));
            }
            ++n;
        }
    }
    themes.apply(ThemeManager::Theme::Light);
}

}  // namespace
}  // namespace ql
