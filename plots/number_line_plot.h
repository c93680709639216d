// SPDX-License-Identifier: GPL-3.0-or-later
// A number line: every value a format can represent, drawn as a stem on one axis, optionally
// with a sample of inputs above it and a line from each input to the value it was quantized to.
// Plain vectors in; the caller decides what the categories and markers mean.
#pragma once

#include <QColor>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <functional>
#include <vector>

#include <qcustomplot.h>

#include "plots/plot_style.h"
#include "plots/symlog_ticker.h"

namespace ql {

class NumberLinePlot : public QCustomPlot {
    Q_OBJECT
public:
    enum class Scale { Linear, SymLog };
    Q_ENUM(Scale)

    explicit NumberLinePlot(QWidget* parent = nullptr);

    void setTitle(const QString& title);
    QString title() const;
    void setAxisLabel(const QString& label);
    // Proposed base name for exported files ("number-line-e4m3").
    void setExportName(const QString& name) { m_exportName = name; }

    // The representable values, ascending. `categories[i]` indexes `categoryNames` and picks the
    // colour and legend entry (e.g. "normal", "subnormal"); empty = one category.
    void setGrid(const std::vector<double>& values, const std::vector<int>& categories = {},
                 const QStringList& categoryNames = {});
    // Sample inputs and their quantized values (same length); `flagged[i]` marks an input drawn
    // in the warning colour (e.g. clipped). Empty vectors remove the overlay.
    void setSamples(const std::vector<double>& inputs, const std::vector<double>& outputs,
                    const std::vector<bool>& flagged = {}, const QString& flaggedName = QString());
    // Dashed vertical lines with a label at the top, e.g. {448, "max 448"}.
    void setMarkers(const QVector<QPair<double, QString>>& markers);

    void setScale(Scale scale);
    Scale scale() const { return m_scale; }

    // Rings one grid point (-1: none) or one sample (-1: none).
    void setSelectedGridIndex(int index);
    int selectedGridIndex() const { return m_selectedGrid; }
    void setSelectedSample(int index);

    // Text for the tooltip over grid point i / sample i; default: the value.
    void setGridToolTip(std::function<QString(int)> provider) { m_gridToolTip = std::move(provider); }
    void setSampleToolTip(std::function<QString(int)> provider) { m_sampleToolTip = std::move(provider); }

    // What is drawn, read back from the plottables (tests and CSV use these).
    int gridPointCount() const;
    int samplePointCount() const;
    std::vector<double> gridValues() const { return m_grid; }
    // series,index,value rows: the grid ("grid:<category>") then inputs and outputs.
    QString toCsv() const;

    // QCustomPlot's own hint is the width of title + legend + axis label in one line; a number
    // line stays useful much narrower, and the layout shortens what does not fit.
    QSize minimumSizeHint() const override { return {240, minimumHeight()}; }

    // Fits the x axis to all data (also on double click).
    void resetView();

    // Index of the grid point / sample nearest to a widget position, within `radiusPx`; -1 if none.
    int gridIndexAt(const QPointF& pos, double radiusPx = 8.0) const;
    int sampleIndexAt(const QPointF& pos, double radiusPx = 8.0) const;
    // Widget position of grid point i / sample i (tests click there).
    QPointF gridPointPosition(int index) const;

Q_SIGNALS:
    void gridPointClicked(int index);
    void sampleClicked(int index);
    void scaleChanged(ql::NumberLinePlot::Scale scale);

protected:
    void changeEvent(QEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    double toAxis(double x) const;
    void rebuild(bool resetRange = true);
    void updateSelection();
    void restyle();
    void showContextMenu(const QPoint& pos);

    QCPTextElement* m_title = nullptr;
    Scale m_scale = Scale::Linear;
    SymLogTransform m_transform;
    QSharedPointer<QCPAxisTicker> m_linearTicker;
    QSharedPointer<SymLogTicker> m_symLogTicker;
    PlotStyle m_style;
    QString m_exportName = QStringLiteral("number-line");

    std::vector<double> m_grid;
    std::vector<int> m_categories;
    QStringList m_categoryNames;
    std::vector<double> m_inputs;
    std::vector<double> m_outputs;
    std::vector<bool> m_flagged;
    QString m_flaggedName;
    QVector<QPair<double, QString>> m_markers;
    int m_selectedGrid = -1;
    int m_selectedSample = -1;

    QVector<QCPGraph*> m_gridGraphs;  // one per category
    QCPGraph* m_inputGraph = nullptr;
    QCPGraph* m_flaggedGraph = nullptr;
    QCPGraph* m_outputGraph = nullptr;
    QCPGraph* m_selectionGraph = nullptr;
    QPoint m_pressPos;
    int m_hoverGrid = -1;
    int m_hoverSample = -1;
    std::function<QString(int)> m_gridToolTip;
    std::function<QString(int)> m_sampleToolTip;
};

}  // namespace ql
