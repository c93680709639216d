// SPDX-License-Identifier: GPL-3.0-or-later
// Legends in a header row: as many columns as fit, so a narrow plot wraps its legend onto more
// rows instead of clipping run names.
#pragma once

class QCPLegend;

namespace ql {

// Sets the wrap (column count) of `legend`, filled columns first, so that columns as wide as its
// widest item fit in `availableWidth` pixels; at least one column. Call before each layout (e.g.
// from QCustomPlot::beforeReplot): item widths change with names and fonts.
void fitLegendColumns(QCPLegend* legend, int availableWidth);

}  // namespace ql
