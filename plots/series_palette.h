// SPDX-License-Identifier: GPL-3.0-or-later
// Distinct colours for overlaid series (one per run in the live dashboard, one per group in a
// grouped bar chart), tuned separately for the light and the dark theme.
#pragma once

#include <QColor>

namespace ql {

struct PlotStyle;

// Colour number `index` (0, 1, 2, …) for series drawn on a plot styled with `style`. The first
// eight are hues of the Okabe-Ito colour-blind-safe set (Okabe & Ito 2008, "Color Universal
// Design"), darkened for white and lightened for dark backgrounds; later indices repeat the hues
// with shifted lightness so that up to 24 series stay distinguishable.
QColor seriesColor(const PlotStyle& style, int index);

}  // namespace ql
