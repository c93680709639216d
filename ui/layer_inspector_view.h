// SPDX-License-Identifier: GPL-3.0-or-later
// The layer inspector: where quantization hurts and why, layer by layer. From the statistics job
// (engine/api/layer_stats_api.h) it shows a layer's weight or activation histogram with the
// chosen format's representable values overlaid (clip thresholds, outliers marked, before vs after
// QAT/QAD as an outline), its block scales (NVFP4's E4M3 against MXFP4's powers of two), per-channel
// absmax with the top channels labelled and the top-k outliers (click a channel for its own
// histogram), a layers × formats SQNR heatmap (click a cell for that layer in that format) and the
// per-layer sensitivity with the automatic mixed-precision choice highlighted.
#pragma once

#include <QString>
#include <QWidget>

#include <optional>

#include "engine/api/layer_stats_api.h"
#include "engine/api/sensitivity_api.h"
#include "ui/divergence_run.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace ql {

class BarChart;
class DepthView;
class HeatmapPlot;
class TokenExplorerView;
class ImportancePanel;
class HistogramPlot;
class ScaleHistogramPlot;

class LayerInspectorView : public QWidget {
    Q_OBJECT
public:
    explicit LayerInspectorView(QWidget* parent = nullptr);

    // Statistics to show; `compare` (optional) are the same layers of another model (after
    // QAT/QAD), drawn as an outline over the histogram.
    void setReport(const LayerStatsReport& report);
    void setCompareReport(const std::optional<LayerStatsReport>& report, const QString& label);
    void setSensitivity(const SensitivityReport& report);
    // The project's divergence runs (Depth and Tokens tabs), oldest first.
    void setDivergenceRuns(const QList<DivergenceRun>& runs);
    bool hasReport() const { return m_report.has_value(); }
    const LayerStatsReport* report() const { return m_report ? &*m_report : nullptr; }

    // Select what is shown; false when the layer / format is not in the report.
    bool selectLayer(const QString& layer);
    bool selectFormat(const QString& format);
    // Weights (false) or the layer's inputs on the calibration data (true, when measured).
    void showActivations(bool activations);
    void setShowActivations(bool on);
    QString currentLayer() const;
    QString currentFormat() const;
    // "histogram", "scales", "outliers", "heatmap", "sensitivity", "depth", "tokens", "importance"
    void showTab(const QString& id);
    QString currentTab() const;
    // A channel's own statistics (outlier view → histogram): shown until another layer is picked.
    void setChannelStatistics(int channel, const TensorStatistics& stats);
    // The checkpoints offered for the before/after overlay: (label, model folder).
    void setOverlayChoices(const QList<QPair<QString, QString>>& choices);

    HistogramPlot* histogramPlot() const { return m_histogram; }
    ScaleHistogramPlot* scalePlot() const { return m_scales; }
    BarChart* channelChart() const { return m_channels; }
    HeatmapPlot* heatmap() const { return m_heatmap; }
    BarChart* sensitivityChart() const { return m_sensitivity; }
    DepthView* depthView() const { return m_depth; }
    TokenExplorerView* tokenView() const { return m_tokens; }
    // The "importance" tab: an importance matrix's per-layer statistics (ui/importance_panel.h).
    ImportancePanel* importancePanel() const { return m_importance; }
    QTableWidget* summaryTable() const { return m_summary; }
    QTableWidget* outlierTable() const { return m_outliers; }

signals:
    void computeRequested();                     // run the statistics job on the current model
    void sensitivityRequested(double bitsBudget);  // run the sensitivity job
    void compareRequested(const QString& modelFolder);  // statistics of another checkpoint for overlay
    void channelRequested(const QString& layer, int channel);  // a channel's own histogram
    // "Quantize this layer's first block" in the Format Explorer (format, the block's values).
    void firstBlockRequested(const QString& format, const std::vector<float>& block);
    // Measure depth-wise error and token divergence: the editor's recipe (empty) or a checkpoint.
    void divergenceRequested(const QString& checkpointFolder);

private:
    const LayerStatistics* layerStats(const QString& layer) const;
    const FormatFit* fit(const LayerStatistics& l, const QString& format) const;
    void rebuildSelectors();
    void refresh();
    void refreshHistogram(const LayerStatistics& l, const FormatFit* f);
    void refreshScales(const LayerStatistics& l);
    void refreshOutliers(const LayerStatistics& l);
    void refreshHeatmap();
    void refreshSensitivity();

    std::optional<LayerStatsReport> m_report, m_compare;
    QString m_compareLabel;
    std::optional<SensitivityReport> m_sensitivityReport;
    std::optional<std::pair<int, TensorStatistics>> m_channel;
    bool m_updating = false;

    QPushButton* m_compute = nullptr;
    QComboBox* m_layer = nullptr;
    QComboBox* m_format = nullptr;
    QComboBox* m_source = nullptr;   // weights / activations
    QCheckBox* m_logCount = nullptr;
    QComboBox* m_overlay = nullptr;
    QPushButton* m_firstBlock = nullptr;
    QLabel* m_status = nullptr;
    QTabWidget* m_tabs = nullptr;
    HistogramPlot* m_histogram = nullptr;
    QTableWidget* m_summary = nullptr;
    ScaleHistogramPlot* m_scales = nullptr;
    BarChart* m_channels = nullptr;
    QTableWidget* m_outliers = nullptr;
    HeatmapPlot* m_heatmap = nullptr;
    BarChart* m_sensitivity = nullptr;
    QDoubleSpinBox* m_budget = nullptr;
    QLabel* m_sensitivityNote = nullptr;
    DepthView* m_depth = nullptr;
    TokenExplorerView* m_tokens = nullptr;
    ImportancePanel* m_importance = nullptr;
    QString m_pendingLayer;  // a layer asked for from the Tokens tab before statistics existed
};

}  // namespace ql
