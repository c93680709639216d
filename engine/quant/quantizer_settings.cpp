// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/quantizer_settings.h"

namespace ql {

std::string describe(const QuantizerSettings& s, bool is_input) {
    if (!s.enabled) return "off";
    const QuantOptions& o = s.options;
    std::string d = o.format;
    if (o.granularity == "channel") d += " per channel";
    if (o.granularity == "group") d += " group " + (o.group_size > 0 ? std::to_string(o.group_size) : std::string("default"));
    if (o.asymmetric) d += " asym";
    if (o.double_quant) d += " double-quant";
    if (o.mx_scale == "rceil") d += " rceil";
    if (is_input) d += s.dynamic ? " dynamic" : " static (" + s.calibrator + ")";
    return d;
}

}  // namespace ql
