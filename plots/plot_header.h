// SPDX-License-Identifier: GPL-3.0-or-later
// The header row of the inspector plots: title left and legend right when both fit side by side,
// otherwise the legend under the title; the legend uses as many columns as fit (at most
// `maxColumns`). Call after the title, the legend entries or the widget width change.
#pragma once

class QCPLayoutGrid;
class QCPLegend;
class QCPTextElement;
class QCustomPlot;

namespace ql {

void arrangePlotHeader(QCustomPlot* plot, QCPLayoutGrid* header, QCPTextElement* title, QCPLegend* legend,
                       int maxColumns);

}  // namespace ql
