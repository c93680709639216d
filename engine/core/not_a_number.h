// SPDX-License-Identifier: GPL-3.0-or-later
// The "no value" of the engine's statistics and reports (JSON writes it as null).
#pragma once

#include <limits>

namespace ql {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace ql
