// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/legend_layout.h"

#include <algorithm>

#include <qcustomplot.h>

namespace ql {

void fitLegendColumns(QCPLegend* legend, int availableWidth) {
    const int n = legend->itemCount();
    if (n == 0) return;
    int widest = 0;
    for (int i = 0; i < n; ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) widest = std::max(widest, item->minimumOuterSizeHint().width());
    const QMargins margins = legend->margins();
    const int spacing = legend->columnSpacing();
    const int room = availableWidth - margins.left() - margins.right() + spacing;
    const int columns = std::clamp(room / std::max(1, widest + spacing), 1, n);
    if (legend->wrap() == columns && legend->fillOrder() == QCPLayoutGrid::foColumnsFirst) return;
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // true: rearrange the items now
}

}  // namespace ql
