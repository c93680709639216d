// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/doctor_report.h"

namespace ql {

const char* doctor_severity_name(DoctorSeverity s) {
    switch (s) {
    case DoctorSeverity::Error: return "error";
    case DoctorSeverity::Warning: return "warning";
    case DoctorSeverity::Info: return "info";
    }
    return "?";
}

int64_t DoctorReport::errors() const {
    int64_t n = 0;
    for (const DoctorFinding& f : findings) n += f.severity == DoctorSeverity::Error;
    return n;
}

int64_t DoctorReport::warnings() const {
    int64_t n = 0;
    for (const DoctorFinding& f : findings) n += f.severity == DoctorSeverity::Warning;
    return n;
}

}  // namespace ql
