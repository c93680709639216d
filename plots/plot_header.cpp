// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/plot_header.h"

#include <qcustomplot.h>

namespace ql {
namespace {

QCPTextElement* createTitle(QCustomPlot* plot, int sideMargin) {
    auto* title = new QCPTextElement(plot, QString());
    title->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
    title->setMargins(QMargins(sideMargin, 4, sideMargin, 0));
    return title;
}

// The header row hugs its content: no stretch, no spacing to the axis rect.
void keepHeaderRowTight(QCustomPlot* plot) {
    plot->plotLayout()->setRowStretchFactor(0, 0.001);
    plot->plotLayout()->setRowSpacing(0);
}

// The width the legend needs with `columns` columns (and leaves it flowed that way).
int legendWidth(QCPLegend* legend, int columns) {
    if (legend->wrap() != columns) {
        legend->setWrap(columns);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-flow the entries
    }
    return static_cast<QCPLayoutElement*>(legend)->minimumOuterSizeHint().width();
}

// Moves the legend to (row, column) of the header; false when it is there already.
bool place(QCPLayoutGrid* header, QCPLegend* legend, int row, int column) {
    if (header->hasElement(row, column) && header->element(row, column) == legend) return false;
    header->take(legend);
    header->simplify();
    header->addElement(row, column, legend);
    if (column == 1) header->setColumnStretchFactors({1.0, 3.0});
    return true;
}

}  // namespace

PlotHeader insertPlotHeader(QCustomPlot* plot, const PlotHeaderOptions& options) {
    PlotHeader header;
    plot->plotLayout()->insertRow(0);
    header.grid = new QCPLayoutGrid;
    plot->plotLayout()->addElement(0, 0, header.grid);
    header.title = createTitle(plot, options.titleSideMargin);
    header.grid->addElement(0, 0, header.title);
    plot->axisRect()->insetLayout()->take(plot->legend);
    header.grid->addElement(0, 1, plot->legend);
    header.grid->setColumnStretchFactors({options.titleStretch, options.legendStretch});
    plot->legend->setIconSize(options.legendIconSize);
    plot->legend->setMargins(QMargins(6, 2, 6, 2));
    plot->legend->setVisible(false);
    keepHeaderRowTight(plot);
    return header;
}

QCPTextElement* insertPlotTitleRow(QCustomPlot* plot, int titleSideMargin) {
    plot->plotLayout()->insertRow(0);
    QCPTextElement* title = createTitle(plot, titleSideMargin);
    plot->plotLayout()->addElement(0, 0, title);
    keepHeaderRowTight(plot);
    return title;
}

void arrangePlotHeader(QCustomPlot* plot, QCPLayoutGrid* header, QCPTextElement* title, QCPLegend* legend,
                       int maxColumns) {
    const int wrapBefore = legend->wrap();
    const int available = plot->width() - 8;
    const int titleWidth = title->text().isEmpty() ? 0 : static_cast<QCPLayoutElement*>(title)->minimumOuterSizeHint().width();
    bool moved = false;
    bool beside = false;
    for (int columns = maxColumns; columns >= 1 && !beside; --columns) {
        if (titleWidth + legendWidth(legend, columns) <= available) {
            moved = place(header, legend, 0, 1);
            beside = true;
        }
    }
    if (!beside) {
        int columns = maxColumns;
        while (columns > 1 && legendWidth(legend, columns) > available) --columns;
        legendWidth(legend, columns);
        moved = place(header, legend, 1, 0);
    }
    // QCustomPlot lays out and draws on its own resize, before the owner gets here: a changed
    // header needs one more pass.
    if (moved || legend->wrap() != wrapBefore) plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace ql
