// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor behind `quantlab-cli doctor PATH [--json]` and the GUI's Export Doctor panel
// (engine/export/export_doctor.h). Facade header: plain types only.
#pragma once

#include <string>

#include "engine/core/doctor_report.h"

namespace ql {

// UserError when `path` does not exist; every problem of the artifact is a finding.
DoctorReport run_doctor(const std::string& path);

// The stable JSON of docs/CLI.md "doctor":
//   {"path", "layout", "consumer", "ok", "errors", "warnings", "layers",
//    "checks": [{"id", "title", "ran", "note"}],
//    "findings": [{"severity", "check", "where", "problem", "consumer", "fix"}]}
std::string doctor_report_json(const DoctorReport& report, int indent = 2);

}  // namespace ql
