// SPDX-License-Identifier: GPL-3.0-or-later
// The one time unit of project files: seconds since the Unix epoch (UTC) as a double, which
// keeps microseconds for centuries and plots directly as an axis.
#pragma once

#include <chrono>
#include <string>

namespace ql::projects {

inline double unix_time_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

// "2024-05-01T12:00:00Z" (ISO 8601, UTC, whole seconds) for messages and listings.
std::string format_utc(double unix_seconds);

}  // namespace ql::projects
