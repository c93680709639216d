// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli project …: create project files and read them from scripts. Reading opens the
// file read-only, so it is safe while a run is being written (and shows it live).
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/core/errors.h"
#include "projects/metric_export.h"
#include "projects/project_file.h"
#include "projects/wall_clock.h"

namespace ql::cli {
namespace {

using projects::OpenMode;
using projects::ProjectFile;

constexpr const char* kUsage =
    "quantlab-cli project new P.qlab\n"
    "       quantlab-cli project runs P.qlab [--json]\n"
    "       quantlab-cli project metrics P.qlab --run N [--name NAME] [--csv | --json] [--out FILE]\n"
    "       quantlab-cli project copy-run SOURCE.qlab --run N DEST.qlab\n"
    "       quantlab-cli project check P.qlab";

// The one project file argument of a subcommand.
std::string single_file(const ArgParser& p, const std::string& what, std::size_t count = 1) {
    if (p.positional().size() != count)
        throw UserError("project " + what + ": expected " + (count == 1 ? "one project file" : "two project files") +
                        " (see quantlab-cli project --help)");
    return p.positional()[0];
}

std::string when(const std::optional<double>& t) { return t ? projects::format_utc(*t) : "-"; }

std::string status_text(const projects::RunRecord& r) {
    std::string s(projects::to_string(r.status));
    // Opened read-only, a dead writer's run cannot be marked yet; say so.
    if (r.status == projects::RunStatus::Running && !r.writer_alive) s += " (writer gone)";
    return s;
}

int run_new(const std::vector<std::string>& args) {
    ArgParser p("project new", {}, {});
    p.parse(args);
    const ProjectFile project = ProjectFile::create(single_file(p, "new"));
    std::printf("created %s\n", project.path().c_str());
    return 0;
}

int run_runs(const std::vector<std::string>& args) {
    ArgParser p("project runs", {}, {"--json"});
    p.parse(args);
    const ProjectFile project = ProjectFile::open(single_file(p, "runs"), OpenMode::ReadOnly);
    const auto runs = project.runs();
    if (p.has("--json")) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : runs) {
            nlohmann::json j = r;
            std::int64_t points = 0;
            for (const auto& s : project.metric_summaries(r.id)) points += s.points;
            j["metric_points"] = points;
            list.push_back(std::move(j));
        }
        const nlohmann::json out = {{"project", project.path().string()},
                                    {"schema_version", project.schema_version()},
                                    {"runs", std::move(list)}};
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%-5s %-11s %-24s %-21s %-21s %10s  %s\n", "ID", "KIND", "STATUS", "STARTED", "ENDED", "POINTS", "NAME");
    for (const auto& r : runs) {
        std::int64_t points = 0;
        for (const auto& s : project.metric_summaries(r.id)) points += s.points;
        std::printf("%-5lld %-11s %-24s %-21s %-21s %10lld  %s\n", static_cast<long long>(r.id), r.kind.c_str(),
                    status_text(r).c_str(), when(r.started_at).c_str(), when(r.ended_at).c_str(),
                    static_cast<long long>(points), r.name.c_str());
    }
    return 0;
}

int run_metrics(const std::vector<std::string>& args) {
    ArgParser p("project metrics", {"--run", "--name", "--out"}, {"--csv", "--json"});
    p.parse(args);
    const std::string file = single_file(p, "metrics");
    if (!p.has("--run")) throw UserError("project metrics: missing required option --run (a run id from 'project runs')");
    if (p.has("--csv") && p.has("--json")) throw UserError("project metrics: choose one of --csv and --json");
    const std::int64_t run = p.integer("--run", 0);
    const std::optional<std::string> name = p.value("--name");
    const ProjectFile project = ProjectFile::open(file, OpenMode::ReadOnly);
    project.run(run);  // a clear error for an unknown run

    std::ofstream file_out;
    if (const auto out_path = p.value("--out")) {
        file_out.open(*out_path, std::ios::binary | std::ios::trunc);
        if (!file_out) throw UserError("project metrics: cannot write '" + *out_path + "'");
    }
    std::ostream& out = file_out.is_open() ? static_cast<std::ostream&>(file_out) : std::cout;
    if (p.has("--csv")) {
        projects::write_metrics_csv(project, run, out, name);
    } else if (p.has("--json")) {
        projects::write_metrics_json(project, run, out, name);
    } else {
        char line[256];
        std::snprintf(line, sizeof line, "%-24s %10s %12s %12s %14s\n", "NAME", "POINTS", "FIRST STEP", "LAST STEP",
                      "LAST VALUE");
        out << line;
        for (const auto& s : project.metric_summaries(run)) {
            if (name && s.name != *name) continue;
            const projects::MetricSeries last = project.load_series(run, s.name, s.last_step - 1);
            std::snprintf(line, sizeof line, "%-24s %10lld %12lld %12lld %14.6g\n", s.name.c_str(),
                          static_cast<long long>(s.points), static_cast<long long>(s.first_step),
                          static_cast<long long>(s.last_step), last.empty() ? 0.0 : last.values.back());
            out << line;
        }
    }
    out.flush();
    if (!out) throw UserError("project metrics: writing the output failed");
    return 0;
}

int run_copy(const std::vector<std::string>& args) {
    ArgParser p("project copy-run", {"--run"}, {});
    p.parse(args);
    single_file(p, "copy-run", 2);
    if (!p.has("--run")) throw UserError("project copy-run: missing required option --run");
    ProjectFile dest = ProjectFile::open(p.positional()[1], OpenMode::ReadWrite);
    const std::int64_t id = dest.copy_run_from(p.positional()[0], p.integer("--run", 0));
    std::printf("copied run %lld of %s to %s as run %lld\n", static_cast<long long>(p.integer("--run", 0)),
                p.positional()[0].c_str(), dest.path().c_str(), static_cast<long long>(id));
    return 0;
}

int run_check(const std::vector<std::string>& args) {
    ArgParser p("project check", {}, {});
    p.parse(args);
    const ProjectFile project = ProjectFile::open(single_file(p, "check"), OpenMode::ReadOnly);
    const std::string result = project.integrity_check();
    if (result != "ok") throw UserError("project file '" + project.path().string() + "' is damaged: " + result);
    std::printf("%s: ok (schema version %d, %zu runs)\n", project.path().c_str(), project.schema_version(),
                project.runs().size());
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (args.empty())
        throw UserError("project: missing subcommand: new, runs, metrics, copy-run or check (see quantlab-cli project --help)");
    const std::string sub = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (sub == "new") return run_new(rest);
    if (sub == "runs") return run_runs(rest);
    if (sub == "metrics") return run_metrics(rest);
    if (sub == "copy-run") return run_copy(rest);
    if (sub == "check") return run_check(rest);
    throw UserError("project: unknown subcommand '" + sub + "' (new, runs, metrics, copy-run, check)");
}

}  // namespace

Command project_command() {
    return {"project", kUsage, "create project files (.qlab) and list their runs and metrics", run};
}

}  // namespace ql::cli
