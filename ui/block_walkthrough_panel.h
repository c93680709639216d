// SPDX-License-Identifier: GPL-3.0-or-later
// A sample block quantized step by step: editable inputs, the format's options, the scale
// computation from the engine's explain_block (label / formula / result), a table of input →
// scaled → code → output → error, the block's grid on a number line, and MSE / SQNR. For the
// GGUF super-block formats (K-quants, IQ4) also the super-block: its fp16 super scale, a table of
// sub-blocks (search result, stored 4/6/8-bit scale and min, decoded scale, error) and the
// selected sub-block's search, candidate by candidate.
#pragma once

#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

#include "engine/api/block_walkthrough.h"
#include "engine/core/format_catalog.h"
#include "engine/core/quant_options.h"
#include "ui/sample_block.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;

namespace ql {

class FlowLayout;
class WrappingLabel;

class NumberLinePlot;

class BlockWalkthroughPanel : public QWidget {
    Q_OBJECT
public:
    explicit BlockWalkthroughPanel(QWidget* parent = nullptr);

    // Switches format: shows the options it has, keeps the block when its length fits the
    // format, otherwise draws a new one of the format's block length.
    void setFormat(const FormatInfo& format);
    const FormatInfo* format() const { return m_format; }

    void setBlock(const std::vector<float>& values);
    const std::vector<float>& block() const { return m_block; }
    void generate(SampleKind kind);
    void generate(SampleKind kind, uint32_t seed);

    QuantOptions options() const;
    // NaN: the block's own amax sets the tensor scale (explain_block's convention).
    float tensorAmax() const;
    void setTensorAmax(float amax);

    // The last successful walkthrough; valid() is false after an error.
    bool hasResult() const { return m_hasResult; }
    const BlockWalkthrough& result() const { return m_result; }
    QString errorText() const;
    double sqnrDb() const { return m_sqnrDb; }
    int selectedElement() const;
    void selectElement(int index);

    QTableWidget* valuesTable() const { return m_values; }
    QWidget* superBlockBox() const { return m_superBlock; }
    QTableWidget* subBlocksTable() const { return m_subBlocks; }
    QTableWidget* searchTable() const { return m_search; }
    // The sub-block whose search is listed (super-block formats); follows the selected element.
    int searchSubBlock() const { return m_searchSubBlock; }
    void selectSubBlock(int index);
    QTableWidget* stepsTable() const { return m_steps; }
    NumberLinePlot* blockPlot() const { return m_plot; }
    QSplitter* splitter() const { return m_splitter; }

Q_SIGNALS:
    // After every recomputation (successful or not).
    void walkthroughUpdated();
    // The options changed (the block structure diagram depends on them).
    void optionsChanged(const ql::QuantOptions& options);
    // A row of the table (or a sample on the plot) was selected.
    void elementSelected(int index);

private:
    void buildUi();
    void recompute();
    void fillTables();
    void fillSuperBlock();
    void showError(const QString& message);
    void onValueEdited(int row, int column);
    void pasteValues();
    int defaultLength() const;
    void updateTensorAmaxVisibility();
    QString codeText(unsigned code) const;

    const FormatInfo* m_format = nullptr;
    std::vector<float> m_block;
    BlockWalkthrough m_result;
    bool m_hasResult = false;
    double m_sqnrDb = 0;
    uint32_t m_seed = 1;
    SampleKind m_lastKind = SampleKind::RandomNormal;
    bool m_filling = false;

    FlowLayout* m_bar = nullptr;
    QWidget* m_granularityGroup = nullptr;
    QWidget* m_mxRuleGroup = nullptr;
    QWidget* m_tensorAmaxGroup = nullptr;
    QSpinBox* m_length = nullptr;
    QLabel* m_granularityLabel = nullptr;
    QComboBox* m_granularity = nullptr;
    QCheckBox* m_asymmetric = nullptr;
    QCheckBox* m_doubleQuant = nullptr;
    QLabel* m_mxRuleLabel = nullptr;
    QComboBox* m_mxRule = nullptr;
    QCheckBox* m_autoAmax = nullptr;
    QDoubleSpinBox* m_tensorAmax = nullptr;
    QLabel* m_error = nullptr;
    QLabel* m_warning = nullptr;
    QTableWidget* m_values = nullptr;
    QTableWidget* m_steps = nullptr;
    NumberLinePlot* m_plot = nullptr;
    WrappingLabel* m_metrics = nullptr;
    QWidget* m_superBlock = nullptr;
    QLabel* m_superSummary = nullptr;
    QTableWidget* m_subBlocks = nullptr;
    QTableWidget* m_search = nullptr;
    QLabel* m_searchTitle = nullptr;
    int m_searchSubBlock = 0;
    QSplitter* m_splitter = nullptr;
};

}  // namespace ql
