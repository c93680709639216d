// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_export.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"

namespace ql::projects {

namespace {

std::vector<MetricSeries> selected(const ProjectFile& project, std::int64_t run_id, const std::optional<std::string>& only) {
    project.run(run_id);  // a UserError for a run that does not exist, rather than empty output
    if (!only) return project.load_metrics(run_id);
    std::vector<MetricSeries> one;
    one.push_back(project.load_series(run_id, *only));
    return one;
}

std::string number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

}  // namespace

void write_metrics_csv(const ProjectFile& project, std::int64_t run_id, std::ostream& out,
                       const std::optional<std::string>& only_name) {
    out << "run,name,step,value,wall_time\n";
    const std::string run = std::to_string(run_id);
    for (const MetricSeries& s : selected(project, run_id, only_name)) {
        const std::string prefix = run + "," + csv_field(s.name) + ",";
        for (std::size_t i = 0; i < s.size(); ++i)
            out << prefix << s.steps[i] << ',' << number(s.values[i]) << ',' << number(s.wall_times[i]) << '\n';
    }
}

void write_metrics_json(const ProjectFile& project, std::int64_t run_id, std::ostream& out,
                        const std::optional<std::string>& only_name) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const MetricSeries& s : selected(project, run_id, only_name)) {
        nlohmann::json values = nlohmann::json::array();
        for (double v : s.values) values.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(number(v)));
        metrics.push_back({{"name", s.name}, {"steps", s.steps}, {"values", std::move(values)}, {"wall_times", s.wall_times}});
    }
    out << nlohmann::json{{"run", run_id}, {"metrics", std::move(metrics)}}.dump() << '\n';
}

}  // namespace ql::projects
