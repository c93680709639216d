// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor's report as the CLI prints it (`doctor` and the end of `export`).
#pragma once

#include <string>

#include "engine/core/doctor_report.h"

namespace ql::cli {

// Checks one per line ("ran" / "skipped: why"), then findings (severity, where, problem,
// consumer, fix), then a summary line. `verbose`: the checks and the informational notes too.
std::string doctor_report_text(const DoctorReport& report, bool verbose);

}  // namespace ql::cli
