// SPDX-License-Identifier: GPL-3.0-or-later
// One metric of one run as plain vectors, ready for a plot: no SQLite or engine types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ql::projects {

struct MetricSeries {
    std::string name;                 // "loss", "kl", "lr", "eval/accuracy" …
    std::vector<std::int64_t> steps;  // ascending, each step once (a re-logged step keeps its last value)
    std::vector<double> values;       // as recorded: NaN and ±Inf are kept, never dropped
    std::vector<double> wall_times;   // seconds since the Unix epoch (UTC) when the point was appended

    std::size_t size() const { return steps.size(); }
    bool empty() const { return steps.empty(); }
};

// Per-series facts without loading the points.
struct SeriesSummary {
    std::string name;
    std::int64_t points = 0;      // points stored (a re-logged step counts each time)
    std::int64_t first_step = 0;
    std::int64_t last_step = 0;   // the largest step
};

}  // namespace ql::projects
