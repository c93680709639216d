// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/plot_style.h"

#include <qcustomplot.h>

namespace ql {

PlotStyle PlotStyle::fromPalette(const QPalette& palette, const QFont& font) {
    PlotStyle s;
    s.dark = palette.color(QPalette::Window).lightness() < 128;
    s.background = palette.color(QPalette::Base);
    s.text = palette.color(QPalette::Text);
    s.font = font;
    if (s.dark) {
        s.axis = QColor(0x9a, 0xa4, 0xb1);
        s.grid = QColor(0x3a, 0x40, 0x4a);
        s.muted = QColor(0x6b, 0x75, 0x82);
        s.primary = QColor(0x6c, 0xb6, 0xff);
        s.secondary = QColor(0xf2, 0xb8, 0x4b);
        s.input = QColor(0xc6, 0x9c, 0xff);
        s.output = QColor(0x4c, 0xd1, 0x8b);
        s.warning = QColor(0xff, 0x6b, 0x6b);
        s.highlight = QColor(0xff, 0xe0, 0x66);
    } else {
        // Colour-blind-safe hues (Okabe-Ito) darkened enough for white backgrounds.
        s.axis = QColor(0x5f, 0x67, 0x72);
        s.grid = QColor(0xe3, 0xe6, 0xea);
        s.muted = QColor(0xa3, 0xab, 0xb5);
        s.primary = QColor(0x00, 0x5f, 0xb8);
        s.secondary = QColor(0xd5, 0x7a, 0x00);
        s.input = QColor(0x7b, 0x3f, 0xb5);
        s.output = QColor(0x00, 0x8a, 0x5e);
        s.warning = QColor(0xc6, 0x28, 0x28);
        s.highlight = QColor(0xe6, 0x9f, 0x00);
    }
    return s;
}

void applyAxisStyle(QCPAxis* axis, const PlotStyle& style) {
    axis->setBasePen(QPen(style.axis, 1));
    axis->setTickPen(QPen(style.axis, 1));
    axis->setSubTickPen(QPen(style.axis, 1));
    axis->setTickLabelColor(style.text);
    axis->setLabelColor(style.text);
    axis->setTickLabelFont(style.font);
    axis->setLabelFont(style.font);
}

void applyPlotStyle(QCustomPlot* plot, const PlotStyle& style, QCPTextElement* title) {
    plot->setBackground(QBrush(style.background));
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(QBrush(style.background));
        for (QCPAxis* axis : rect->axes()) {
            applyAxisStyle(axis, style);
            axis->grid()->setPen(QPen(style.grid, 1, Qt::SolidLine));
            axis->grid()->setSubGridPen(QPen(style.grid, 1, Qt::DotLine));
            axis->grid()->setZeroLinePen(QPen(style.axis, 1));
        }
    }
    if (plot->legend) {
        plot->legend->setBrush(QBrush(style.background));
        plot->legend->setBorderPen(Qt::NoPen);
        plot->legend->setTextColor(style.text);
        plot->legend->setFont(style.font);
    }
    if (title) {
        QFont titleFont = style.font;
        titleFont.setBold(true);
        title->setFont(titleFont);
        title->setTextColor(style.text);
    }
}

}  // namespace ql
