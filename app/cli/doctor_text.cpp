// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/doctor_text.h"

namespace ql::cli {

std::string doctor_report_text(const DoctorReport& r, bool verbose) {
    std::string t;
    if (verbose) {
        t += "doctor       " + r.path + " (" + r.layout + ", checked as " + r.consumer + " loads it)\n";
        for (const DoctorCheck& c : r.checks) {
            char line[96];
            std::snprintf(line, sizeof line, "check        %-20s ", c.id.c_str());
            t += line + std::string(c.ran ? "ran" : "skipped") + (c.note.empty() ? "" : (c.ran ? "  " : ": ") + c.note) + "\n";
        }
    }
    int64_t infos = 0;
    for (const DoctorFinding& f : r.findings) {
        infos += f.severity == DoctorSeverity::Info;
        if (!verbose && f.severity == DoctorSeverity::Info) continue;  // `doctor PATH` shows them
        char head[32];
        std::snprintf(head, sizeof head, "%-12s ", doctor_severity_name(f.severity));
        t += head + (f.where.empty() ? std::string() : f.where + ": ") + f.problem + "  [" + f.check + "]\n";
        if (!f.consumer.empty()) t += "             consumer: " + f.consumer + "\n";
        if (!f.fix.empty()) t += "             fix: " + f.fix + "\n";
    }
    t += "doctor       " + std::to_string(r.errors()) + " error(s), " + std::to_string(r.warnings()) + " warning(s), " +
         std::to_string(infos) + " note(s), " + std::to_string(r.layers) + " quantized layer(s) checked" +
         (r.ok() ? "" : " -- NOT deployable as is") + "\n";
    return t;
}

}  // namespace ql::cli
