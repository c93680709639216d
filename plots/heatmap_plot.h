// SPDX-License-Identifier: GPL-3.0-or-later
// A rows × columns heatmap with a colour scale, e.g. layers × formats SQNR: one cell per value,
// labelled with the value when cells are large enough, clickable and hoverable. Row 0 is at the
// top. Plain vectors in; the caller says what rows, columns and values mean.
#pragma once

#include <QPair>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "plots/plot_style.h"

class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QCPItemText;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;

namespace ql {

class HeatmapPlot : public QWidget {
    Q_OBJECT
public:
    // Cells whose value labels are not created at all (beyond this many cells the labels could
    // never fit on a screen anyway).
    static constexpr int kMaxLabelledCells = 4096;

    explicit HeatmapPlot(QWidget* parent = nullptr);

    void setTitle(const QString& title);
    QString title() const;
    void setExportName(const QString& name) { m_exportName = name; }

    // `values[r][c]` is the value of row r (e.g. a layer) in column c (e.g. a format); NaN (and
    // ±Inf) = missing, drawn in a neutral colour with a dash. Missing or extra entries of a short
    // or long row are treated as NaN / ignored. `valueLabel` names the colour scale ("SQNR (dB)").
    // Row names sharing a dotted prefix ("model.layers.") are shown without it (the prefix moves
    // to the axis label); long names are elided in the middle, the tooltip gives the full name.
    // Clears the selection.
    void setData(const QStringList& rows, const QStringList& cols, const std::vector<std::vector<double>>& values,
                 const QString& valueLabel);
    // Default true: higher values are better (SQNR) and get the bright end of the gradient; false
    // reverses the gradient (e.g. for MSE) so that bright still means good.
    void setHigherIsBetter(bool higherIsBetter);
    bool higherIsBetter() const { return m_higherIsBetter; }
    // For quantities that are neither good nor bad by size (bin flips: too many is oscillation,
    // too few is stagnation): bright = high, and the scale label says "brighter = higher"
    // instead of a judgement. setHigherIsBetter() ends it.
    void setNeutralScale();
    bool neutralScale() const { return m_neutral; }
    // The colour scale's label as drawn: the value label plus the judgement.
    QString scaleLabel() const;

    // Frames cell (row, col); out of range (e.g. -1, -1) removes the frame. Emits nothing.
    void setSelectedCell(int row, int col);
    int selectedRow() const { return m_selectedRow; }
    int selectedColumn() const { return m_selectedCol; }

    int rowCount() const { return m_rows.size(); }
    int columnCount() const { return m_cols.size(); }
    double value(int row, int col) const;

    // Matrix CSV as pandas writes it: header ",<col 0>,<col 1>,…", then "<row name>,<v>,…" with
    // full names and empty fields for missing values.
    QString csv() const;
    QCustomPlot* customPlot() const { return m_plot; }

    // Centre of cell (row, col) in customPlot() pixels (tests click there), and the inverse: the
    // cell under a customPlot() position, (-1, -1) when none.
    QPointF cellCentre(int row, int col) const;
    QPair<int, int> cellAt(const QPointF& pos) const;
    // The colour the map gives cell (row, col) (the missing colour for NaN).
    QColor cellColour(int row, int col) const;
    // Value labels currently shown (0 when cells are too small for them).
    int visibleCellLabelCount() const;
    // The row label as drawn (prefix removed, possibly elided).
    QString displayedRowLabel(int row) const;

    QSize minimumSizeHint() const override { return {300, 200}; }
    QSize sizeHint() const override { return {760, 520}; }

Q_SIGNALS:
    void cellClicked(int row, int col);
    // On entering a cell; (-1, -1) on leaving the cells.
    void cellHovered(int row, int col);

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void restyle();
    void rebuildCells();
    void updateLabels();  // after each layout: elision, rotation, which value labels fit
    void updateGradient();
    void updateSelectionFrame();
    QString formatValue(double v) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void showContextMenu(const QPoint& pos);

    QCustomPlot* m_plot = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemRect* m_frameOuter = nullptr;
    QCPItemRect* m_frameInner = nullptr;
    std::vector<QCPItemText*> m_cellLabels;  // row-major; empty when too many cells
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("heatmap");

    QStringList m_rows;
    QStringList m_cols;
    QString m_rowPrefix;  // dotted prefix common to all row names, not drawn on the ticks
    std::vector<std::vector<double>> m_values;  // rows × cols, padded with NaN
    QString m_valueLabel;
    bool m_higherIsBetter = true;
    bool m_neutral = false;
    QStringList m_drawnRowLabels;
    int m_selectedRow = -1;
    int m_selectedCol = -1;
    QPoint m_pressPos;
    QPair<int, int> m_hovered{-1, -1};
    bool m_updatingLabels = false;
};

}  // namespace ql
