// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/plot_tool_tip.h"

#include <QMouseEvent>
#include <QToolTip>

#include <qcustomplot.h>

namespace ql {

std::optional<QPointF> axisRectHoverPosition(const QCustomPlot* plot, const QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton) return std::nullopt;
    const QPointF pos = event->position();
    if (!plot->axisRect()->rect().contains(pos.toPoint())) {
        QToolTip::hideText();
        return std::nullopt;
    }
    return pos;
}

void showPlotToolTip(QWidget* widget, const QMouseEvent* event, const QString& text) {
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, widget);
}

}  // namespace ql
