// SPDX-License-Identifier: GPL-3.0-or-later
// Hover tool tips of the plots: shown at the pointer, hidden when there is nothing to say.
#pragma once

#include <QPointF>
#include <QString>

#include <optional>

class QCustomPlot;
class QMouseEvent;
class QWidget;

namespace ql {

// The pointer position (widget pixels) of a hover over `plot`'s axis rect. nullopt while a
// button is held (a drag: the tool tip is left as it is) and outside the axis rect (the tool
// tip is hidden).
std::optional<QPointF> axisRectHoverPosition(const QCustomPlot* plot, const QMouseEvent* event);

// Shows `text` as the tool tip of `widget` at the event's pointer position; an empty `text`
// hides the tool tip.
void showPlotToolTip(QWidget* widget, const QMouseEvent* event, const QString& text);

}  // namespace ql
