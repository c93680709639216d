// SPDX-License-Identifier: GPL-3.0-or-later
// The header row of the plots: a bold title at the left and, in most plots, the legend beside or
// under it, so that neither covers data. Every plot builds its title and header here.
#pragma once

#include <QSize>

class QCPLayoutGrid;
class QCPLegend;
class QCPTextElement;
class QCustomPlot;

namespace ql {

struct PlotHeaderOptions {
    int titleSideMargin = 8;           // px left and right of the title text
    double titleStretch = 1.0;         // column stretch factors of title : legend
    double legendStretch = 3.0;
    QSize legendIconSize = {14, 10};   // px
};

struct PlotHeader {
    QCPLayoutGrid* grid = nullptr;     // owned by the plot's layout
    QCPTextElement* title = nullptr;   // owned by `grid`
};

// Inserts row 0 of `plot`'s layout: a grid holding an empty title (column 0) and the plot's
// legend (column 1), taken out of the axis rect. The legend starts hidden, with the common
// margins and `options.legendIconSize`; the row takes no stretch and no spacing.
PlotHeader insertPlotHeader(QCustomPlot* plot, const PlotHeaderOptions& options = {});

// Inserts row 0 of `plot`'s layout holding only an empty title (plots without a legend in the
// header), `titleSideMargin` px left and right of it.
QCPTextElement* insertPlotTitleRow(QCustomPlot* plot, int titleSideMargin);

// Title left and legend right when both fit side by side, otherwise the legend under the title;
// the legend uses as many columns as fit (at most `maxColumns`). Call after the title, the
// legend entries or the widget width change.
void arrangePlotHeader(QCustomPlot* plot, QCPLayoutGrid* header, QCPTextElement* title, QCPLegend* legend,
                       int maxColumns);

}  // namespace ql
