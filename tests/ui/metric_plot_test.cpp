// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/metric_plot.h"

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QSlider>
#include <QTest>
#include <QToolButton>
#include <QWheelEvent>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <qcustomplot.h>

#include "plots/plot_export.h"
#include "plots/plot_style.h"
#include "ui/theme_manager.h"
#include "ui_test_support.h"
#include "wait_for.h"

namespace ql {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A shown plot at a fixed size, replotted once so pixel <-> coordinate mappings are valid.
void showPlot(MetricPlot& plot, int w = 900, int h = 480) {
    plot.resize(w, h);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    test::settle(60);
}

// Lets the coalescing timer fire and the queued replot run, however late a busy machine serves
// them (a fixed sleep would assume how fast the timer gets its turn).
void drain(MetricPlot& plot) {
    ASSERT_TRUE(test::waitFor([&] { return !plot.replotPending(); }, 120000));
    test::settle();
}

QPointF centreOfAxisRect(const MetricPlot& plot) { return plot.customPlot()->axisRect()->rect().center(); }

void sendWheel(QWidget* target, const QPointF& pos, int angle, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
    QWheelEvent event(pos, target->mapToGlobal(pos), QPoint(), QPoint(0, angle), Qt::NoButton, modifiers,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(target, &event);
}

void sendMouseMove(QWidget* target, const QPointF& pos) {
    QMouseEvent event(QEvent::MouseMove, pos, target->mapToGlobal(pos), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(target, &event);
}

TEST(MetricPlot, AMillionPointsInThousandChunksStaySortedAndReplotsAreCoalesced) {
    MetricPlot plot;
    showPlot(plot);
    const int id = plot.addSeries("run-a", "loss");
    test::settle(60);
    const int before = plot.replotCount();
    QElapsedTimer clock;
    clock.start();
    constexpr int kChunks = 1000, kChunk = 1000;
    std::vector<double> steps(kChunk), values(kChunk);
    for (int c = 0; c < kChunks; ++c) {
        for (int i = 0; i < kChunk; ++i) {
            const double step = static_cast<double>(c) * kChunk + i;
            steps[static_cast<size_t>(i)] = step;
            values[static_cast<size_t>(i)] = 2.0 / (1.0 + step * 1e-4) + 0.05 * std::sin(step);
        }
        plot.appendPoints(id, steps, values);
        QCoreApplication::processEvents();  // the coalescing timer gets its chances
    }
    drain(plot);
    const double seconds = static_cast<double>(clock.elapsed()) / 1000.0;

    const auto data = plot.rawGraph(id)->data();
    ASSERT_EQ(data->size(), kChunks * kChunk);
    EXPECT_TRUE(std::is_sorted(data->constBegin(), data->constEnd(),
                               [](const QCPGraphData& a, const QCPGraphData& b) { return a.key < b.key; }));
    EXPECT_EQ(data->constBegin()->key, 0.0);
    EXPECT_EQ((data->constEnd() - 1)->key, 999999.0);
    EXPECT_TRUE(plot.rawGraph(id)->adaptiveSampling());
    EXPECT_EQ(plot.seriesSteps(id).size(), 1000000u);

    const int replots = plot.replotCount() - before;
    EXPECT_GE(replots, 1);                  // the data did get drawn
    EXPECT_LE(replots, 30.0 * seconds + 1);  // ≤ 30 per second, however fast the appends came
    // Follow is on: the newest step is in view.
    EXPECT_GE(plot.customPlot()->xAxis->range().upper, 999999.0);
}

// Three plots side by side on a 1280-pixel window leave ~330 pixels each: the tool bar wraps onto
// a second row, and every control keeps at least its own size (no "Smoothin", no "eset zoo").
TEST(MetricPlot, ToolBarWrapsInsteadOfClippingItsLabels) {
    for (const int width : {900, 330, 260}) {
        MetricPlot plot;
        showPlot(plot, width, 300);
        drain(plot);
        if (width >= 900) EXPECT_EQ(plot.toolbarRows(), 1);
        else EXPECT_GE(plot.toolbarRows(), 2) << width;
        for (const char* name : {"logY", "smoothing", "smoothingValue", "follow", "resetZoom"}) {
            auto* control = plot.findChild<QWidget*>(QString::fromLatin1(name));
            ASSERT_NE(control, nullptr) << name;
            const QRect inPlot(control->mapTo(&plot, QPoint(0, 0)), control->size());
            EXPECT_TRUE(plot.rect().contains(inPlot)) << name << " at width " << width;
            EXPECT_GE(control->width(), control->minimumSizeHint().width()) << name << " at width " << width;
        }
        // The plot keeps the room the tool bar leaves.
        EXPECT_GT(plot.customPlot()->height(), 100) << width;
    }
}

TEST(MetricPlot, SmoothingIsTensorBoardsDebiasedEmaAndIsIncremental) {
    MetricPlot plot;
    const int id = plot.addSeries("run-a", "loss");
    plot.setSmoothing(0.5);
    plot.appendPoints(id, {0, 1}, {1, 2});
    plot.appendPoints(id, {2, 3, 4}, {3, kNaN, 4});
    // last = last·α + (1−α)·v; smoothed = last / (1 − αⁿ), NaN passes through:
    // 0.5/0.5 = 1, 1.25/0.75 = 5/3, 2.125/0.875 = 17/7, NaN, 3.0625/0.9375 = 49/15.
    std::vector<double> s = plot.smoothedValues(id);
    ASSERT_EQ(s.size(), 5u);
    EXPECT_DOUBLE_EQ(s[0], 1.0);
    EXPECT_DOUBLE_EQ(s[1], 5.0 / 3.0);
    EXPECT_DOUBLE_EQ(s[2], 17.0 / 7.0);
    EXPECT_TRUE(std::isnan(s[3]));
    EXPECT_DOUBLE_EQ(s[4], 49.0 / 15.0);
    // The drawn smoothed curve holds the same values; the raw curve keeps the raw ones.
    const auto smoothData = plot.smoothedGraph(id)->data();
    ASSERT_EQ(smoothData->size(), 5);
    EXPECT_DOUBLE_EQ(smoothData->at(4)->value, 49.0 / 15.0);
    EXPECT_DOUBLE_EQ(plot.rawGraph(id)->data()->at(4)->value, 4.0);
    EXPECT_TRUE(plot.smoothedGraph(id)->visible());

    // A new weight recomputes from the raw points: α = 0.25 gives 1, 1.6875/0.9375 = 1.8.
    plot.setSmoothing(0.25);
    s = plot.smoothedValues(id);
    ASSERT_EQ(s.size(), 5u);
    EXPECT_DOUBLE_EQ(s[0], 1.0);
    EXPECT_DOUBLE_EQ(s[1], 1.8);

    plot.setSmoothing(0.0);
    EXPECT_TRUE(plot.smoothedValues(id).empty());
    EXPECT_FALSE(plot.smoothedGraph(id)->visible());
    plot.setSmoothing(5.0);
    EXPECT_DOUBLE_EQ(plot.smoothing(), 0.999);
}

TEST(MetricPlot, NanAndInfStayAsGapsAndAreCountedAndMarked) {
    MetricPlot plot;
    const int id = plot.addSeries("run-a", "loss");
    plot.appendPoints(id, {0, 1, 2, 3, 4}, {1, kNaN, 3, std::numeric_limits<double>::infinity(), 5});
    const auto data = plot.rawGraph(id)->data();
    ASSERT_EQ(data->size(), 5);  // nothing dropped
    EXPECT_DOUBLE_EQ(data->at(0)->value, 1.0);
    EXPECT_TRUE(std::isnan(data->at(1)->value));  // QCustomPlot breaks the line at NaN
    EXPECT_TRUE(std::isnan(data->at(3)->value));  // Inf too: it cannot be drawn
    EXPECT_DOUBLE_EQ(data->at(4)->value, 5.0);
    EXPECT_EQ(plot.nonFiniteCount(id), 2);
    EXPECT_TRUE(std::isinf(plot.seriesValues(id)[3]));  // the raw value is kept as it came
    // One marker per non-finite point, on the hidden marker axis.
    int markers = 0;
    for (int i = 0; i < plot.customPlot()->graphCount(); ++i) {
        QCPGraph* g = plot.customPlot()->graph(i);
        if (g->valueAxis() == plot.customPlot()->yAxis2) markers += g->data()->size();
    }
    EXPECT_EQ(markers, 2);
    const QStringList rows = plot.csv().trimmed().split('\n');
    ASSERT_EQ(rows.size(), 6);
    EXPECT_EQ(rows[2], "1,nan");
    EXPECT_EQ(rows[4], "3,inf");
}

TEST(MetricPlot, LogYHidesNonPositiveValuesAndKeepsThem) {
    MetricPlot plot;
    const int id = plot.addSeries("run-a", "lr");
    plot.appendPoints(id, {0, 1, 2, 3}, {-1, 0, 0.5, 2});
    QSignalSpy spy(&plot, &MetricPlot::logYChanged);
    plot.setLogY(true);
    EXPECT_EQ(spy.count(), 1);
    EXPECT_EQ(plot.customPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    const auto data = plot.rawGraph(id)->data();
    ASSERT_EQ(data->size(), 4);
    EXPECT_TRUE(std::isnan(data->at(0)->value));
    EXPECT_TRUE(std::isnan(data->at(1)->value));
    EXPECT_DOUBLE_EQ(data->at(2)->value, 0.5);
    EXPECT_DOUBLE_EQ(data->at(3)->value, 2.0);
    EXPECT_GT(plot.customPlot()->yAxis->range().lower, 0.0);
    EXPECT_LE(plot.customPlot()->yAxis->range().lower, 0.5);
    EXPECT_GE(plot.customPlot()->yAxis->range().upper, 2.0);
    EXPECT_TRUE(plot.findChild<QCheckBox*>("logY")->isChecked());
    // Points appended while log is on are filtered too.
    plot.appendPoints(id, {4}, {-3});
    EXPECT_TRUE(std::isnan(plot.rawGraph(id)->data()->at(4)->value));

    plot.setLogY(false);
    EXPECT_EQ(plot.customPlot()->yAxis->scaleType(), QCPAxis::stLinear);
    EXPECT_DOUBLE_EQ(plot.rawGraph(id)->data()->at(0)->value, -1.0);
    EXPECT_DOUBLE_EQ(plot.rawGraph(id)->data()->at(4)->value, -3.0);
}

TEST(MetricPlot, WheelZoomStopsFollowingAndDoubleClickResumes) {
    MetricPlot plot;
    showPlot(plot);
    const int id = plot.addSeries("run-a", "loss");
    std::vector<double> steps, values;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        values.push_back(1.0 / (1 + i));
    }
    plot.appendPoints(id, steps, values);
    drain(plot);
    ASSERT_TRUE(plot.follow());
    QCustomPlot* cp = plot.customPlot();
    const QCPRange followed = cp->xAxis->range();
    EXPECT_GE(followed.upper, 100.0);

    QSignalSpy spy(&plot, &MetricPlot::followChanged);
    const QCPRange yBefore = cp->yAxis->range();
    sendWheel(cp, centreOfAxisRect(plot), 120);  // zoom in on steps
    EXPECT_FALSE(plot.follow());
    ASSERT_EQ(spy.count(), 1);
    EXPECT_FALSE(spy.at(0).at(0).toBool());
    EXPECT_LT(cp->xAxis->range().size(), followed.size());
    EXPECT_DOUBLE_EQ(cp->yAxis->range().lower, yBefore.lower);  // plain wheel: x only
    EXPECT_FALSE(plot.findChild<QCheckBox*>("follow")->isChecked());

    // New data no longer moves the view.
    const QCPRange zoomed = cp->xAxis->range();
    plot.appendPoints(id, {150, 200}, {0.01, 0.005});
    drain(plot);
    EXPECT_DOUBLE_EQ(cp->xAxis->range().lower, zoomed.lower);
    EXPECT_DOUBLE_EQ(cp->xAxis->range().upper, zoomed.upper);

    // Ctrl+wheel zooms the values, not the steps.
    sendWheel(cp, centreOfAxisRect(plot), 120, Qt::ControlModifier);
    EXPECT_DOUBLE_EQ(cp->xAxis->range().upper, zoomed.upper);
    EXPECT_LT(cp->yAxis->range().size(), yBefore.size());

    QTest::mouseDClick(cp, Qt::LeftButton, {}, centreOfAxisRect(plot).toPoint());
    EXPECT_TRUE(plot.follow());
    drain(plot);
    EXPECT_GE(cp->xAxis->range().upper, 200.0);
    EXPECT_LE(cp->xAxis->range().lower, 0.0);
    EXPECT_TRUE(plot.findChild<QCheckBox*>("follow")->isChecked());
}

TEST(MetricPlot, CrosshairListsEveryVisibleSeriesAtTheNearestStep) {
    MetricPlot plot;
    showPlot(plot);
    const int a = plot.addSeries("run-a", "loss");
    const int b = plot.addSeries("run-b", "loss");
    const int c = plot.addSeries("run-c", "loss");
    plot.appendPoints(a, {0, 10, 20, 30}, {1, 2, 3, 4});
    plot.appendPoints(b, {0, 10, 20, 30}, {5, 6, 7, 8.25});
    plot.appendPoints(c, {5, 25}, {9, 10});  // logs at other steps
    drain(plot);
    QCustomPlot* cp = plot.customPlot();
    const QPointF at(cp->xAxis->coordToPixel(19), centreOfAxisRect(plot).y());

    sendMouseMove(cp, at);  // what hovering does
    EXPECT_EQ(plot.crosshairText(),
              "step 20\nrun-a · loss  3\nrun-b · loss  7\nrun-c · loss  10 at step 25");

    plot.setSeriesVisible(b, false);
    EXPECT_EQ(plot.crosshairAt(at), "step 20\nrun-a · loss  3\nrun-c · loss  10 at step 25");

    plot.setSmoothing(0.5);
    EXPECT_EQ(plot.crosshairAt(QPointF(cp->xAxis->coordToPixel(11), at.y())),
              "step 10\nrun-a · loss  1.66667 (raw 2)\nrun-c · loss  9 (raw 9) at step 5");

    // Outside the axis rect: nothing.
    EXPECT_TRUE(plot.crosshairAt(QPointF(2, 2)).isEmpty());
    EXPECT_TRUE(plot.crosshairText().isEmpty());
}

TEST(MetricPlot, LegendClickHidesAndShowsASeries) {
    MetricPlot plot;
    showPlot(plot);
    const int a = plot.addSeries("run-a", "loss");
    const int b = plot.addSeries("run-b", "loss");
    plot.appendPoints(a, {0, 1}, {1, 2});
    plot.appendPoints(b, {0, 1}, {3, 4});
    drain(plot);
    QCustomPlot* cp = plot.customPlot();
    QCPAbstractLegendItem* item = cp->legend->itemWithPlottable(plot.rawGraph(b));
    ASSERT_NE(item, nullptr);
    const QPoint at = item->rect().center();
    QSignalSpy spy(&plot, &MetricPlot::seriesVisibilityChanged);

    QTest::mouseClick(cp, Qt::LeftButton, {}, at);
    EXPECT_FALSE(plot.isSeriesVisible(b));
    EXPECT_FALSE(plot.rawGraph(b)->visible());
    EXPECT_TRUE(plot.isSeriesVisible(a));
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), b);
    // Still in the legend, so it can be turned back on.
    ASSERT_NE(cp->legend->itemWithPlottable(plot.rawGraph(b)), nullptr);

    drain(plot);
    QTest::mouseClick(cp, Qt::LeftButton, {}, cp->legend->itemWithPlottable(plot.rawGraph(b))->rect().center());
    EXPECT_TRUE(plot.isSeriesVisible(b));
    EXPECT_TRUE(plot.rawGraph(b)->visible());
}

TEST(MetricPlot, NarrowPlotsWrapTheLegendInsteadOfClippingNames) {
    MetricPlot plot;
    for (const char* run : {"nvfp4-qat lr=1e-5", "nvfp4-qad kl", "mxfp4-qat", "int4-awq g128"})
        plot.appendPoints(plot.addSeries(run, "train loss"), {0, 1}, {2, 1});
    showPlot(plot, 420, 320);
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    QCPLegend* legend = plot.customPlot()->legend;
    EXPECT_LT(legend->wrap(), 4);
    for (int i = 0; i < legend->itemCount(); ++i)
        EXPECT_LE(legend->item(i)->outerRect().right(), plot.customPlot()->width()) << "item " << i;
    plot.resize(1400, 320);
    drain(plot);
    plot.customPlot()->replot(QCustomPlot::rpImmediateRefresh);
    EXPECT_EQ(legend->wrap(), 4);  // wide: one row
}

TEST(MetricPlot, CsvHasAStepColumnAndOneColumnPerCurve) {
    MetricPlot plot;
    const int a = plot.addSeries("run-a", "loss");
    const int b = plot.addSeries("run, b", "kl");
    plot.appendPoints(a, {0, 1, 2}, {1, 2, 3});
    plot.appendPoints(b, {1, 3}, {0.5, kNaN});
    EXPECT_EQ(plot.csv(), "step,run-a/loss,\"run, b/kl\"\n"
                          "0,1,\n"
                          "1,2,0.5\n"
                          "2,3,\n"
                          "3,,nan\n");
    plot.setSmoothing(0.5);
    const QStringList rows = plot.csv().split('\n');
    EXPECT_EQ(rows[0], "step,run-a/loss,\"run, b/kl\",run-a/loss (smoothed),\"run, b/kl (smoothed)\"");
    EXPECT_EQ(rows[2], "1,2,0.5,1.6666666666666667,0.5");
}

TEST(MetricPlot, RunsGetColoursAndMetricsGetDashes) {
    MetricPlot plot;
    const int aLoss = plot.addSeries("run-a", "loss");
    const int bLoss = plot.addSeries("run-b", "loss");
    EXPECT_EQ(plot.rawGraph(aLoss)->pen().style(), Qt::SolidLine);  // one metric: all solid
    EXPECT_EQ(plot.rawGraph(bLoss)->pen().style(), Qt::SolidLine);
    EXPECT_NE(plot.rawGraph(aLoss)->pen().color(), plot.rawGraph(bLoss)->pen().color());
    const int aKl = plot.addSeries("run-a", "kl");
    EXPECT_EQ(plot.rawGraph(aKl)->pen().color(), plot.rawGraph(aLoss)->pen().color());
    EXPECT_EQ(plot.rawGraph(aKl)->pen().style(), Qt::DashLine);
    const int custom = plot.addSeries("run-c", "loss", QColor(Qt::magenta));
    EXPECT_EQ(plot.rawGraph(custom)->pen().color(), QColor(Qt::magenta));
    // The legend names run and metric.
    EXPECT_EQ(plot.customPlot()->legend->itemCount(), 4);
    EXPECT_EQ(plot.rawGraph(aKl)->name(), "run-a · kl");
}

TEST(MetricPlot, RemoveClearAndOutOfOrderAppends) {
    MetricPlot plot;
    const int a = plot.addSeries("run-a", "loss");
    const int b = plot.addSeries("run-b", "loss");
    plot.appendPoints(a, {0, 2}, {1, 3});
    plot.appendPoints(a, {1}, {2});  // a re-logged step: merged, not appended out of order
    EXPECT_EQ(plot.seriesSteps(a), (std::vector<double>{0, 1, 2}));
    EXPECT_EQ(plot.seriesValues(a), (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(plot.rawGraph(a)->data()->at(1)->key, 1.0);
    plot.setSeriesData(a, {5, 4}, {50, 40});
    EXPECT_EQ(plot.seriesSteps(a), (std::vector<double>{4, 5}));
    const int graphs = plot.customPlot()->graphCount();
    plot.removeSeries(b);
    EXPECT_EQ(plot.seriesCount(), 1);
    EXPECT_EQ(plot.customPlot()->graphCount(), graphs - 3);
    EXPECT_EQ(plot.rawGraph(b), nullptr);
    plot.appendPoints(b, {1}, {1});  // unknown id: ignored
    plot.clear();
    EXPECT_EQ(plot.seriesCount(), 0);
    EXPECT_EQ(plot.customPlot()->graphCount(), 0);
    EXPECT_FALSE(plot.customPlot()->legend->visible());
    EXPECT_EQ(plot.csv(), "step\n");
}

TEST(MetricPlot, ToolbarControlsDriveTheSettings) {
    MetricPlot plot;
    plot.findChild<QCheckBox*>("logY")->setChecked(true);
    EXPECT_TRUE(plot.logY());
    plot.findChild<QSlider*>("smoothing")->setValue(600);
    EXPECT_DOUBLE_EQ(plot.smoothing(), 0.6);
    EXPECT_EQ(plot.findChild<QLabel*>("smoothingValue")->text(), "0.600");
    plot.setSmoothing(0.9);
    EXPECT_EQ(plot.findChild<QSlider*>("smoothing")->value(), 900);
    plot.findChild<QCheckBox*>("follow")->setChecked(false);
    EXPECT_FALSE(plot.follow());
    plot.findChild<QToolButton*>("resetZoom")->click();
    EXPECT_TRUE(plot.follow());
}

TEST(MetricPlot, SavesNonEmptyPngAndSvg) {
    MetricPlot plot;
    plot.resize(700, 360);
    plot.setTitle("Training loss");
    const int id = plot.addSeries("run-a", "loss");
    plot.appendPoints(id, {0, 1, 2, 3}, {2, 1.5, 1.2, 1.1});
    const QString dir = test::scratchDir();
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/metric.png").isEmpty());
    EXPECT_GT(QFileInfo(dir + "/metric.png").size(), 1000);
    EXPECT_FALSE(QImage(dir + "/metric.png").isNull());
    ASSERT_TRUE(savePlot(plot.customPlot(), dir + "/metric.svg").isEmpty());
    QFile svg(dir + "/metric.svg");
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

// A dashboard-like plot in both themes: three runs of a noisy loss, smoothed, one NaN, the
// crosshair shown. Set QL_PLOT_SHOT_DIR to keep the PNGs for looking at them.
TEST(MetricPlot, FollowsTheLightAndDarkTheme) {
    ThemeManager themes;
    const QString keep = qEnvironmentVariable("QL_PLOT_SHOT_DIR");
    MetricPlot survivor;  // made before the switch: must recolour itself
    survivor.addSeries("run-a", "loss");
    for (const auto theme : {ThemeManager::Theme::Light, ThemeManager::Theme::Dark}) {
        themes.apply(theme);
        EXPECT_EQ(survivor.customPlot()->axisRect()->backgroundBrush().color(),
                  PlotStyle::fromPalette(survivor.palette(), survivor.font()).background);
        EXPECT_EQ(survivor.customPlot()->legend->textColor(),
                  PlotStyle::fromPalette(survivor.palette(), survivor.font()).text);
        MetricPlot plot;
        plot.setTitle("Training loss");
        plot.setYLabel("loss");
        const char* runs[] = {"nvfp4-qat lr=1e-5", "nvfp4-qad kl", "mxfp4-qat"};
        for (int r = 0; r < 3; ++r) {
            const int id = plot.addSeries(runs[r], "loss");
            std::vector<double> steps, values;
            for (int i = 0; i < 3000; ++i) {
                steps.push_back(i * 2.0);
                const double noise = 0.08 * std::sin(i * 12.9898 + r * 78.233) * std::cos(i * 4.1414);
                values.push_back(0.9 + 1.6 * std::exp(-i / (500.0 + 250 * r)) + 0.05 * r + noise);
            }
            if (r == 2) values[2500] = kNaN;
            plot.appendPoints(id, steps, values);
        }
        const int kl = plot.addSeries(runs[1], "eval kl");
        plot.appendPoints(kl, {0, 1000, 2000, 3000, 4000, 5000, 6000}, {1.9, 1.3, 1.1, 1.02, 0.98, 0.96, 0.95});
        plot.setSmoothing(0.8);
        showPlot(plot, 900, 460);
        drain(plot);
        QCustomPlot* cp = plot.customPlot();
        plot.crosshairAt(QPointF(cp->xAxis->coordToPixel(2400), cp->axisRect()->rect().center().y()));
        const QImage image = plot.grab().toImage();
        ASSERT_FALSE(image.isNull());
        const PlotStyle style = PlotStyle::fromPalette(plot.palette(), plot.font());
        EXPECT_EQ(style.dark, theme == ThemeManager::Theme::Dark);
        const QImage plotImage = cp->grab().toImage();
        const QColor corner = plotImage.pixelColor(plotImage.width() - 3, plotImage.height() - 3);
        EXPECT_EQ(corner.lightness() < 100, theme == ThemeManager::Theme::Dark);
        if (!keep.isEmpty()) {
            QDir().mkpath(keep);
            image.save(QStringLiteral("%1/metric-%2.png").arg(keep, ThemeManager::name(theme)));
        }
        // Narrow and logarithmic: the toolbar, legend and log ticks must still fit.
        plot.setLogY(true);
        plot.hideCrosshair();
        plot.resize(480, 340);
        drain(plot);
        EXPECT_GT(cp->yAxis->range().lower, 0.0);
        if (!keep.isEmpty())
            plot.grab().save(QStringLiteral("%1/metric-log-narrow-%2.png").arg(keep, ThemeManager::name(theme)));
    }
    themes.apply(ThemeManager::Theme::Light);
}

TEST(MetricPlot, AnEmptyChartSaysThereIsNoDataUntilAPointArrives) {
    MetricPlot plot;
    plot.resize(480, 340);
    drain(plot);
    EXPECT_TRUE(plot.showsNoData());
    // A curve without points (an encoder's run on the KL chart) is still no data.
    const int id = plot.addSeries(QStringLiteral("#6 QAD"), QStringLiteral("eval/kl"));
    drain(plot);
    EXPECT_TRUE(plot.showsNoData());
    plot.appendPoints(id, {0, 1}, {0.5, 0.4});
    drain(plot);
    EXPECT_FALSE(plot.showsNoData());
    plot.removeSeries(id);
    drain(plot);
    EXPECT_TRUE(plot.showsNoData());
}

}  // namespace
}  // namespace ql
