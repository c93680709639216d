// SPDX-License-Identifier: GPL-3.0-or-later
#include "plots/series_palette.h"

#include "plots/plot_style.h"

namespace ql {

QColor seriesColor(const PlotStyle& style, int index) {
    // Okabe-Ito order (blue, vermillion, bluish green, reddish purple, orange, sky blue, yellow,
    // grey); yellow is replaced by violet on white where it has too little contrast.
    static const QRgb light[] = {0x0060b0, 0xd55e00, 0x008a5e, 0xb8458f, 0xb87d00, 0x2f8fcf, 0x6b4fbb, 0x5f6772};
    static const QRgb dark[] = {0x6cb6ff, 0xff8a4c, 0x4cd18b, 0xf28cc6, 0xf2c14b, 0x9fd8ff, 0xc69cff, 0xc9d1d9};
    constexpr int kBase = 8;
    if (index < 0) index = 0;
    QColor c = QColor::fromRgb(style.dark ? dark[index % kBase] : light[index % kBase]);
    const int round = (index / kBase) % 3;
    if (round == 1) c = style.dark ? c.darker(135) : c.lighter(140);
    if (round == 2) c = style.dark ? c.lighter(125) : c.darker(140);
    return c;
}

}  // namespace ql
