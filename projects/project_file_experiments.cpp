// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectFile: experiments and the claims and results of their runs.
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "projects/process_identity.h"
#include "projects/project_file.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"
#include "projects/wall_clock.h"

namespace ql::projects {
namespace {

constexpr const char* kExperimentColumns =
    "SELECT id, name, identity_sha256, spec, manifests, created_at FROM experiments";

ExperimentRecord read_experiment(const Statement& st) {
    ExperimentRecord e;
    e.id = st.column_int64(0);
    e.name = st.column_text(1);
    e.identity_sha256 = st.column_text(2);
    e.spec_json = st.column_text(3);
    e.manifests_json = st.column_text(4);
    e.created_at = st.column_double(5);
    return e;
}

void require_json_object(const std::string& text, const std::string& what) {
    if (!nlohmann::json::accept(text) || !nlohmann::json::parse(text).is_object())
        throw UserError(what + " is not a JSON object");
}

}  // namespace

std::int64_t ProjectFile::ensure_experiment(const std::string& name, const std::string& identity_sha256,
                                            const std::string& spec_json) {
    require_writable("record an experiment");
    require_json_object(spec_json, "the spec of experiment '" + name + "'");
    Transaction tx(connection(), "recording experiment '" + name + "'");
    Statement find(connection(), "SELECT id FROM experiments WHERE name = ?1 AND identity_sha256 = ?2");
    find.bind_text(1, name).bind_text(2, identity_sha256);
    std::int64_t id = 0;
    if (find.step("looking up an experiment")) {
        id = find.column_int64(0);
        Statement up(connection(), "UPDATE experiments SET spec = ?2 WHERE id = ?1");
        up.bind_int64(1, id).bind_text(2, spec_json);
        up.run("updating experiment '" + name + "'");
    } else {
        Statement ins(connection(), "INSERT INTO experiments(name, identity_sha256, spec, created_at) VALUES (?1, ?2, ?3, ?4)");
        ins.bind_text(1, name).bind_text(2, identity_sha256).bind_text(3, spec_json).bind_double(4, unix_time_now());
        ins.run("adding experiment '" + name + "'");
        id = connection().last_insert_rowid();
    }
    tx.commit();
    return id;
}

void ProjectFile::append_experiment_manifest(std::int64_t experiment_id, const std::string& manifest_json) {
    require_writable("record an experiment's manifest");
    require_json_object(manifest_json, "the manifest");
    Transaction tx(connection(), "recording an experiment's manifest");
    nlohmann::json all = nlohmann::json::parse(experiment(experiment_id).manifests_json);
    all.push_back(nlohmann::json::parse(manifest_json));
    Statement up(connection(), "UPDATE experiments SET manifests = ?2 WHERE id = ?1");
    up.bind_int64(1, experiment_id).bind_text(2, all.dump());
    up.run("recording an experiment's manifest");
    tx.commit();
}

std::vector<ExperimentRecord> ProjectFile::experiments() const {
    Statement st(connection(), std::string(kExperimentColumns) + " ORDER BY id");
    std::vector<ExperimentRecord> out;
    while (st.step("listing experiments")) out.push_back(read_experiment(st));
    return out;
}

ExperimentRecord ProjectFile::experiment(std::int64_t id) const {
    Statement st(connection(), std::string(kExperimentColumns) + " WHERE id = ?1");
    st.bind_int64(1, id);
    if (!st.step("reading an experiment"))
        throw UserError("project file '" + path_.string() + "' has no experiment " + std::to_string(id));
    return read_experiment(st);
}

ExperimentClaim ProjectFile::claim_experiment_run(std::int64_t experiment_id, const std::string& cell,
                                                  std::int64_t replicate, std::int64_t seed) {
    require_writable("claim an experiment run");
    const ProcessIdentity me = current_process();
    Transaction tx(connection(), "claiming experiment run " + cell + " #" + std::to_string(replicate));
    Statement find(connection(),
                   "SELECT result IS NOT NULL, claim_pid, claim_start_ticks, claim_machine FROM experiment_runs "
                   "WHERE experiment_id = ?1 AND cell = ?2 AND replicate = ?3");
    find.bind_int64(1, experiment_id).bind_text(2, cell).bind_int64(3, replicate);
    if (find.step("reading an experiment run")) {
        if (find.column_int64(0) != 0) return ExperimentClaim::Done;
        if (!find.column_is_null(1)) {
            ProcessIdentity owner;
            owner.pid = find.column_int64(1);
            owner.start_ticks = find.column_is_null(2) ? 0 : find.column_int64(2);
            owner.machine = find.column_is_null(3) ? "" : find.column_text(3);
            const bool is_me = owner.pid == me.pid && owner.machine == me.machine && owner.start_ticks == me.start_ticks;
            if (!is_me && writer_alive(owner, std::nullopt, unix_time_now(), options_.stale_heartbeat_s))
                return ExperimentClaim::Taken;
        }
    }
    Statement up(connection(),
                 "INSERT INTO experiment_runs(experiment_id, cell, replicate, seed, run_id, claim_pid, claim_start_ticks, "
                 "claim_machine, result, updated_at) VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, NULL, ?8) "
                 "ON CONFLICT(experiment_id, cell, replicate) DO UPDATE SET seed = ?4, run_id = NULL, claim_pid = ?5, "
                 "claim_start_ticks = ?6, claim_machine = ?7, result = NULL, updated_at = ?8");
    up.bind_int64(1, experiment_id).bind_text(2, cell).bind_int64(3, replicate).bind_int64(4, seed);
    up.bind_int64(5, me.pid).bind_int64(6, me.start_ticks).bind_text(7, me.machine).bind_double(8, unix_time_now());
    up.run("claiming an experiment run");
    tx.commit();
    return ExperimentClaim::Claimed;
}

void ProjectFile::set_experiment_run_id(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate,
                                        std::int64_t run_id) {
    require_writable("record an experiment run");
    require_run(run_id);
    Statement up(connection(), "UPDATE experiment_runs SET run_id = ?4, updated_at = ?5 "
                               "WHERE experiment_id = ?1 AND cell = ?2 AND replicate = ?3");
    up.bind_int64(1, experiment_id).bind_text(2, cell).bind_int64(3, replicate).bind_int64(4, run_id);
    up.bind_double(5, unix_time_now());
    up.run("recording an experiment run");
}

void ProjectFile::set_experiment_run_result(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate,
                                            const std::string& result_json) {
    require_writable("record an experiment result");
    require_json_object(result_json, "the result of experiment run " + cell);
    Statement up(connection(), "UPDATE experiment_runs SET result = ?4, claim_pid = NULL, claim_start_ticks = NULL, "
                               "claim_machine = NULL, updated_at = ?5 "
                               "WHERE experiment_id = ?1 AND cell = ?2 AND replicate = ?3");
    up.bind_int64(1, experiment_id).bind_text(2, cell).bind_int64(3, replicate).bind_text(4, result_json);
    up.bind_double(5, unix_time_now());
    up.run("recording an experiment result");
}

void ProjectFile::release_experiment_run(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate) {
    require_writable("release an experiment run");
    Statement up(connection(), "UPDATE experiment_runs SET claim_pid = NULL, claim_start_ticks = NULL, claim_machine = NULL, "
                               "updated_at = ?4 WHERE experiment_id = ?1 AND cell = ?2 AND replicate = ?3 AND result IS NULL");
    up.bind_int64(1, experiment_id).bind_text(2, cell).bind_int64(3, replicate).bind_double(4, unix_time_now());
    up.run("releasing an experiment run");
}

std::vector<ExperimentRunRecord> ProjectFile::experiment_runs(std::int64_t experiment_id) const {
    Statement st(connection(), "SELECT experiment_id, cell, replicate, seed, run_id, claim_pid, result, updated_at "
                               "FROM experiment_runs WHERE experiment_id = ?1 ORDER BY replicate, cell");
    st.bind_int64(1, experiment_id);
    std::vector<ExperimentRunRecord> out;
    while (st.step("listing experiment runs")) {
        ExperimentRunRecord r;
        r.experiment_id = st.column_int64(0);
        r.cell = st.column_text(1);
        r.replicate = st.column_int64(2);
        r.seed = st.column_int64(3);
        r.run_id = st.column_optional_int64(4);
        r.claim_pid = st.column_optional_int64(5);
        if (!st.column_is_null(6)) r.result_json = st.column_text(6);
        r.updated_at = st.column_double(7);
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace ql::projects
