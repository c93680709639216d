// SPDX-License-Identifier: GPL-3.0-or-later
// The layer inspector on the demo model, driven offscreen: compute the statistics (a real job,
// stored in the project), see the histogram with the format's grid and clip points, the NVFP4 vs
// MXFP4 scales, outliers with a channel's own histogram, the SQNR heatmap (a click opens that
// layer in that format), sensitivity, and the first block in the Format Explorer.
#include <QDir>
#include <QCheckBox>
#include <QFile>
#include <QTableWidget>

#include <gtest/gtest.h>

#include <cmath>

#include "wait_for.h"
#include "plots/bar_chart.h"
#include "plots/heatmap_plot.h"
#include "plots/histogram_plot.h"
#include "plots/scale_histogram_plot.h"
#include "projects/project_file.h"
#include "ui/block_walkthrough_panel.h"
#include "ui/format_explorer_view.h"
#include "ui/inspector_controller.h"
#include "ui/job_runner.h"
#include "ui/layer_inspector_view.h"
#include "ui/model_panel.h"
#include "ui/workbench.h"
#include "ui_test_support.h"

namespace ql {
namespace {

using test::waitFor;

class LayerInspectorTest : public ::testing::Test {
protected:
    void SetUp() override {
        window = test::makeMainWindow();
        w = window->workbench();
        project = QDir(test::scratchDir()).filePath(QStringLiteral("inspect.qlab"));
        QFile::remove(project);
        ASSERT_TRUE(window->openProject(project, true));
        window->openModel(QStringLiteral("demo"));
        ASSERT_TRUE(waitFor([&] { return w->modelPanel()->hasModel(); }, 120000));
        window->showView(QStringLiteral("inspector"));
        ASSERT_TRUE(w->inspectorController()->computeStatistics()) << w->lastError().toStdString();
        ASSERT_TRUE(w->runner()->waitForFinished(300000));
        ASSERT_TRUE(w->inspector()->hasReport()) << w->lastError().toStdString();
    }
    std::unique_ptr<MainWindow> window;
    Workbench* w = nullptr;
    QString project;
};

TEST_F(LayerInspectorTest, HistogramShowsTheDistributionWithTheFormatGridAndClipPoints) {
    LayerInspectorView* v = w->inspector();
    const LayerStatsReport& r = *v->report();
    ASSERT_FALSE(r.layers.empty());
    const LayerStatistics& first = r.layers.front();
    ASSERT_TRUE(v->selectLayer(QString::fromStdString(first.layer)));
    ASSERT_TRUE(v->selectFormat(QStringLiteral("nvfp4")));
    // Linear counts: the log view draws empty bins at 0.5 so that they show.
    v->findChild<QCheckBox*>(QStringLiteral("inspectLogCount"))->setChecked(false);
    const std::vector<double> drawn = v->histogramPlot()->drawnCounts();
    double total = 0;
    for (double c : drawn) total += c;
    double expected = 0;
    for (double c : first.weight.histogram.counts) expected += c;
    EXPECT_DOUBLE_EQ(total, expected);
    EXPECT_GT(total, 0);
    EXPECT_GT(v->histogramPlot()->drawnGridLineCount(), 0);
    EXPECT_GT(v->histogramPlot()->drawnOutlierCount(), 0);
    // The summary names the format's clipped fraction and SQNR.
    QTableWidget* t = v->summaryTable();
    bool hasSqnr = false;
    for (int i = 0; i < t->rowCount(); ++i) hasSqnr = hasSqnr || t->item(i, 0)->text() == QLatin1String("weight SQNR");
    EXPECT_TRUE(hasSqnr);
    // Activations were sampled from the calibration data.
    v->setShowActivations(true);
    EXPECT_TRUE(first.has_activation);
    double activationTotal = 0;
    for (double c : v->histogramPlot()->drawnCounts()) activationTotal += c;
    EXPECT_GT(activationTotal, 0);
}

TEST_F(LayerInspectorTest, ScalesCompareNvfp4WithMxfp4) {
    LayerInspectorView* v = w->inspector();
    v->showTab(QStringLiteral("scales"));
    EXPECT_EQ(v->currentTab(), QStringLiteral("scales"));
    EXPECT_FALSE(v->scalePlot()->caption().isEmpty());
    EXPECT_TRUE(v->scalePlot()->csv().contains(QStringLiteral("NVFP4")));
    EXPECT_TRUE(v->scalePlot()->csv().contains(QStringLiteral("MXFP4")));
}

TEST_F(LayerInspectorTest, HeatmapCellOpensThatLayerInThatFormat) {
    LayerInspectorView* v = w->inspector();
    const LayerStatsReport& r = *v->report();
    ASSERT_GE(r.layers.size(), 2u);
    ASSERT_GE(r.formats.size(), 2u);
    v->showTab(QStringLiteral("heatmap"));
    emit v->heatmap()->cellClicked(1, 1);
    EXPECT_EQ(v->currentTab(), QStringLiteral("histogram"));
    EXPECT_EQ(v->currentLayer(), QString::fromStdString(r.layers[1].layer));
    EXPECT_EQ(v->currentFormat(), QString::fromStdString(r.formats[1]));
}

TEST_F(LayerInspectorTest, ChannelClickShowsThatChannelsHistogram) {
    LayerInspectorView* v = w->inspector();
    const LayerStatistics& first = v->report()->layers.front();
    v->selectLayer(QString::fromStdString(first.layer));
    v->findChild<QCheckBox*>(QStringLiteral("inspectLogCount"))->setChecked(false);
    v->showTab(QStringLiteral("outliers"));
    EXPECT_EQ(v->outlierTable()->rowCount(), static_cast<int>(first.weight.top_outliers.size()));
    emit v->channelChart()->barClicked(QStringLiteral("channel 2"));
    ASSERT_TRUE(waitFor([&] { return v->currentTab() == QLatin1String("histogram"); }, 120000)) << w->lastError().toStdString();
    double total = 0;
    for (double c : v->histogramPlot()->drawnCounts()) total += c;
    // One output channel: as many weights as the layer has inputs (minus any outside the range).
    EXPECT_LE(total, static_cast<double>(first.weight_shape.back()));
    EXPECT_GT(total, 0.5 * static_cast<double>(first.weight_shape.back()));
}

TEST_F(LayerInspectorTest, StatisticsAreStoredInTheProject) {
    const auto file = projects::ProjectFile::open(project.toStdString(), projects::OpenMode::ReadOnly);
    // The scalar per-layer results arrive with the run; the full records (histograms, scales) are
    // written right after it, off the GUI thread.
    auto histograms = [&] {
        int n = 0;
        for (const auto& s : file.layer_stats(w->runner()->runId())) n += s.kind == "weight_histogram" ? 1 : 0;
        return n;
    };
    ASSERT_TRUE(waitFor([&] { return histograms() > 0; }, 120000));
    EXPECT_EQ(histograms(), static_cast<int>(w->inspector()->report()->layers.size()));
    EXPECT_EQ(file.run(w->runner()->runId()).kind, "stats");
}

TEST_F(LayerInspectorTest, FirstBlockOpensInTheFormatExplorer) {
    LayerInspectorView* v = w->inspector();
    const LayerStatistics& first = v->report()->layers.front();
    v->selectLayer(QString::fromStdString(first.layer));
    v->selectFormat(QStringLiteral("nvfp4"));
    ASSERT_FALSE(first.first_block.empty());
    emit v->firstBlockRequested(QStringLiteral("nvfp4"), first.first_block);
    EXPECT_EQ(window->currentViewId(), QStringLiteral("format-explorer"));
    EXPECT_EQ(window->formatExplorer()->walkthrough()->block(), first.first_block);
}

TEST_F(LayerInspectorTest, SensitivityBarsWithTheMixedPrecisionChoice) {
    ASSERT_TRUE(w->inspectorController()->measureSensitivity(6.0));
    ASSERT_TRUE(w->runner()->waitForFinished(300000));
    BarChart* chart = w->inspector()->sensitivityChart();
    // One bar per layer the NVFP4 preset quantizes: every Linear but lm_head (embeddings are not
    // quantized by recipes).
    int quantized = 0;
    for (const LayerSummary& l : w->modelPanel()->summary().layers)
        quantized += l.kind == "linear" && l.name.find("lm_head") == std::string::npos ? 1 : 0;
    EXPECT_EQ(chart->categoryCount(), quantized);
    int highlighted = 0;
    for (const BarChart::Bar& b : chart->bars()) highlighted += b.highlighted ? 1 : 0;
    EXPECT_LT(highlighted, quantized) << "a 6-bit budget cannot keep every layer at FP8";
}

}  // namespace
}  // namespace ql
