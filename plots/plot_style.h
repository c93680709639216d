// SPDX-License-Identifier: GPL-3.0-or-later
// Colours and fonts for QCustomPlot widgets, derived from the widget palette so that every plot
// follows the application theme (light or dark) without knowing about it.
#pragma once

#include <QColor>
#include <QFont>
#include <QPalette>

class QCPAxis;
class QCPTextElement;
class QCustomPlot;

namespace ql {

struct PlotStyle {
    bool dark = false;
    QColor background;  // plot area and widget
    QColor text;        // tick labels, titles
    QColor axis;        // axis lines and ticks
    QColor grid;        // major grid lines
    QColor muted;       // secondary marks (representable values under a sample)
    QColor primary;     // the main series
    QColor secondary;   // a second category (e.g. subnormal values)
    QColor input;       // sample inputs
    QColor output;      // quantized outputs
    QColor warning;     // clipped values, NaN markers
    QColor highlight;   // the selected point
    QFont font;

    static PlotStyle fromPalette(const QPalette& palette, const QFont& font);
};

// Applies the background, axis, grid and legend colours of `style` to every axis rect of `plot`
// and, when given, to its `title` (bold). Legends get no frame: they sit in the header row.
void applyPlotStyle(QCustomPlot* plot, const PlotStyle& style, QCPTextElement* title = nullptr);

// Axis line, ticks, labels and their font; for axes outside the axis rects (a colour scale).
void applyAxisStyle(QCPAxis* axis, const PlotStyle& style);

}  // namespace ql
