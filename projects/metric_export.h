// SPDX-License-Identifier: GPL-3.0-or-later
// A run's metrics as CSV or JSON, for spreadsheets, notebooks and `quantlab-cli project metrics`.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace ql::projects {

class ProjectFile;

// CSV, one line per point, ordered by name then step:
//   run,name,step,value,wall_time
// Numbers round-trip (%.17g); non-finite values are written nan, inf, -inf; names are quoted
// when they contain a comma, quote or newline (RFC 4180).
void write_metrics_csv(const ProjectFile& project, std::int64_t run_id, std::ostream& out,
                       const std::optional<std::string>& only_name = std::nullopt);

// JSON: {"run": N, "metrics": [{"name": …, "steps": […], "values": […], "wall_times": […]}]}.
// JSON has no NaN or infinity, so those values are the strings "nan", "inf", "-inf".
void write_metrics_json(const ProjectFile& project, std::int64_t run_id, std::ostream& out,
                        const std::optional<std::string>& only_name = std::nullopt);

}  // namespace ql::projects
