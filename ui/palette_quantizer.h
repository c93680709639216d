// SPDX-License-Identifier: GPL-3.0-or-later
// Reduces a screenshot to an 8-bit palette (median cut, no dithering) so the PNGs committed to
// docs/ stay small: a UI is mostly flat colours, and 256 well-chosen ones are indistinguishable.
#pragma once

#include <QImage>

namespace ql {

// An Indexed8 image with at most `colours` (≤ 256) entries; exact when the image has no more
// distinct colours than that. Alpha is dropped.
QImage quantizeToPalette(const QImage& image, int colours = 256);

}  // namespace ql
