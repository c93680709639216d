// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/experiment_report.h"

#include <cmath>
#include <map>
#include <set>

#include "engine/core/errors.h"

namespace ql::projects {

using nlohmann::json;

int64_t find_experiment(const ProjectFile& file, const std::string& name_or_spec) {
    const std::vector<ExperimentRecord> all = file.experiments();
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->name == name_or_spec) return it->id;
    std::string names;
    for (const auto& e : all) names += (names.empty() ? "" : ", ") + e.name;
    experiments::ExperimentSpec spec;
    try {
        spec = experiments::load_experiment(name_or_spec);
    } catch (const UserError&) {
        throw UserError("project '" + file.path().string() + "' has no experiment '" + name_or_spec + "' (it has: " +
                        (names.empty() ? "none" : names) + ")");
    }
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->identity_sha256 == spec.identity_sha256) return it->id;
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->name == spec.name) return it->id;
    throw UserError("project '" + file.path().string() + "' has no run of experiment '" + spec.name + "'");
}

ExperimentReport load_experiment_report(const ProjectFile& file, int64_t experiment_id) {
    ExperimentReport r;
    r.record = file.experiment(experiment_id);
    r.spec = experiments::parse_experiment(r.record.spec_json, "experiment '" + r.record.name + "' of " + file.path().string());
    r.planned_runs = r.spec.cells.size() * static_cast<std::size_t>(r.spec.replicates);
    for (const ExperimentRunRecord& row : file.experiment_runs(experiment_id)) {
        if (!row.result_json) continue;
        const json result = json::parse(*row.result_json);
        experiments::RunResult run;
        run.cell = row.cell;
        run.replicate = row.replicate;
        run.run_id = row.run_id.value_or(0);
        run.metrics = result.value("metrics", std::map<std::string, double>{});
        run.examples = result.value("examples", int64_t{0});
        json manifest = {{"cell", row.cell}, {"replicate", row.replicate}, {"seed", row.seed}, {"run_id", run.run_id}};
        if (row.run_id) {
            try {
                const RunRecord rec = file.run(*row.run_id);
                const json config = json::parse(rec.config_json);
                if (config.contains("manifest")) manifest.update(config["manifest"]);
                if (rec.model_id) manifest["model_sha256"] = file.model(*rec.model_id).content_sha256;
            } catch (const UserError&) {
                manifest["note"] = "the run was deleted from the project";
            }
        }
        r.run_manifests.push_back(std::move(manifest));
        r.runs.push_back(std::move(run));
    }
    r.result = experiments::analyse(r.spec, r.runs);
    return r;
}

json experiment_report_json(const ExperimentReport& report) {
    json j = json::parse(experiments::result_json(report.spec, report.result));
    j["experiment"] = report.spec.name;
    j["experiment_id"] = report.record.id;
    j["title"] = report.spec.title;
    j["claim"] = report.spec.claim;
    j["source"] = report.spec.source;
    j["analysis"] = report.spec.analysis;
    j["identity_sha256"] = report.spec.identity_sha256;
    j["replicates"] = report.spec.replicates;
    j["planned_runs"] = report.planned_runs;
    j["completed_runs"] = report.runs.size();
    j["manifest"] = {{"invocations", json::parse(report.record.manifests_json)}, {"runs", report.run_manifests}};
    return j;
}

std::string experiment_report_text(const ExperimentReport& report) {
    const experiments::ExperimentSpec& s = report.spec;
    std::string out = "experiment " + s.name + ": " + s.title + "\n";
    if (!s.claim.empty()) out += "claim:  " + s.claim + "\n";
    if (!s.source.empty()) out += "source: " + s.source + "\n";
    out += std::to_string(report.runs.size()) + " of " + std::to_string(report.planned_runs) + " runs done (" +
           std::to_string(s.cells.size()) + " cells x " + std::to_string(s.replicates) + " replicates)\n\n";
    out += experiments::result_text(s, report.result);
    const json invocations = json::parse(report.record.manifests_json);
    if (!invocations.empty()) {
        const json& last = invocations.back();
        std::set<std::string> hosts;
        for (const json& i : invocations) hosts.insert(i.value("host", "?"));
        std::string host_list;
        for (const auto& h : hosts) host_list += (host_list.empty() ? "" : ", ") + h;
        out += "\nmanifest: QuantLab " + last.value("quantlab_version", "?") + " (" + last.value("commit", "?") + "), LibTorch " +
               last.value("libtorch", "?") + ", BLAS " + last.value("blas", "?") + ", " + last.value("device", "?") + ", " +
               std::to_string(last.value("threads", 0)) + " threads; hosts: " + host_list + "\n";
    }
    return out;
}

json cells_outside_intervals(const ExperimentReport& here, const ExperimentReport& other) {
    std::map<std::pair<std::string, std::string>, const experiments::MetricSummary*> theirs;
    for (const auto& c : other.result.cells)
        for (const auto& m : c.metrics) theirs[{c.cell->key, m.metric}] = &m;
    json out = json::array();
    for (const auto& c : here.result.cells)
        for (const auto& m : c.metrics) {
            const auto it = theirs.find({c.cell->key, m.metric});
            if (it == theirs.end()) continue;
            const experiments::MetricSummary& o = *it->second;
            if (!std::isfinite(o.value.ci.low) || !std::isfinite(o.value.ci.high)) continue;
            if (m.value.mean >= o.value.ci.low && m.value.mean <= o.value.ci.high) continue;
            out.push_back({{"cell", c.cell->key}, {"metric", m.metric}, {"mean", m.value.mean}, {"other_mean", o.value.mean},
                           {"other_ci_low", o.value.ci.low}, {"other_ci_high", o.value.ci.high}});
        }
    return out;
}

}  // namespace ql::projects
