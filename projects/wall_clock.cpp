// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/wall_clock.h"

#include <cmath>
#include <ctime>

namespace ql::projects {

std::string format_utc(double unix_seconds) {
    const auto t = static_cast<std::time_t>(std::floor(unix_seconds));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

}  // namespace ql::projects
