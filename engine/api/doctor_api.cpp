// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/doctor_api.h"

#include <nlohmann/json.hpp>

#include "engine/export/export_doctor.h"

namespace ql {

DoctorReport run_doctor(const std::string& path) { return run_export_doctor(path); }

std::string doctor_report_json(const DoctorReport& r, int indent) {
    using ojson = nlohmann::ordered_json;
    ojson checks = ojson::array(), findings = ojson::array();
    for (const DoctorCheck& c : r.checks) checks.push_back({{"id", c.id}, {"title", c.title}, {"ran", c.ran}, {"note", c.note}});
    for (const DoctorFinding& f : r.findings)
        findings.push_back({{"severity", doctor_severity_name(f.severity)},
                            {"check", f.check},
                            {"where", f.where},
                            {"problem", f.problem},
                            {"consumer", f.consumer},
                            {"fix", f.fix}});
    return ojson({{"path", r.path},
                  {"layout", r.layout},
                  {"consumer", r.consumer},
                  {"ok", r.ok()},
                  {"errors", r.errors()},
                  {"warnings", r.warnings()},
                  {"layers", r.layers},
                  {"checks", checks},
                  {"findings", findings}})
        .dump(indent);
}

}  // namespace ql
