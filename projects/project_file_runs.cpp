// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectFile: runs, and reading their metrics and per-layer statistics.
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "projects/metric_chunk.h"
#include "projects/process_identity.h"
#include "projects/project_file.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"
#include "projects/wall_clock.h"

#ifndef QUANTLAB_VERSION
#define QUANTLAB_VERSION ""
#endif

namespace ql::projects {

namespace {

constexpr const char* kRunColumns =
    "SELECT id, kind, name, status, model_id, recipe_id, config, seed, host, quantlab_version, created_at, "
    "started_at, ended_at, heartbeat_at, writer_pid, writer_start_ticks, writer_machine, message FROM runs";

RunRecord read_run(const Statement& st, double now, double stale_after_s) {
    RunRecord r;
    r.id = st.column_int64(0);
    r.kind = st.column_text(1);
    r.name = st.column_text(2);
    r.status = parse_run_status(st.column_text(3));
    r.model_id = st.column_optional_int64(4);
    r.recipe_id = st.column_optional_int64(5);
    r.config_json = st.column_text(6);
    r.seed = st.column_optional_int64(7);
    r.host = st.column_text(8);
    r.quantlab_version = st.column_text(9);
    r.created_at = st.column_double(10);
    r.started_at = st.column_optional_double(11);
    r.ended_at = st.column_optional_double(12);
    r.heartbeat_at = st.column_optional_double(13);
    r.writer_pid = st.column_optional_int64(14);
    r.message = st.column_text(17);
    if (r.status == RunStatus::Running) {
        ProcessIdentity writer;
        writer.pid = r.writer_pid.value_or(0);
        writer.start_ticks = st.column_optional_int64(15).value_or(0);
        writer.machine = st.column_text(16);
        writer.host = r.host;
        r.writer_alive = writer_alive(writer, r.heartbeat_at, now, stale_after_s);
    }
    return r;
}

}  // namespace

std::int64_t ProjectFile::create_run(const RunSpec& spec) {
    require_writable("create a run");
    if (spec.kind.empty()) throw UserError("a run needs a kind (ptq, qat, qad, eval …)");
    const auto config = nlohmann::json::parse(spec.config_json, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        throw UserError("the config of a new " + spec.kind + " run is not a JSON object");
    if (spec.model_id) model(*spec.model_id);     // clear messages rather than a foreign-key error
    if (spec.recipe_id) recipe(*spec.recipe_id);
    Statement st(connection(), "INSERT INTO runs(kind, name, status, model_id, recipe_id, config, seed, host, "
                               "quantlab_version, created_at) VALUES (?1, ?2, 'created', ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    st.bind_text(1, spec.kind).bind_text(2, spec.name).bind_optional_int64(3, spec.model_id);
    st.bind_optional_int64(4, spec.recipe_id).bind_text(5, spec.config_json).bind_optional_int64(6, spec.seed);
    st.bind_text(7, current_process().host).bind_text(8, QUANTLAB_VERSION).bind_double(9, unix_time_now());
    st.run("creating a " + spec.kind + " run");
    return connection().last_insert_rowid();
}

std::vector<RunRecord> ProjectFile::runs() const {
    Statement st(connection(), std::string(kRunColumns) + " ORDER BY id");
    std::vector<RunRecord> out;
    const double now = unix_time_now();
    while (st.step("listing runs")) out.push_back(read_run(st, now, options_.stale_heartbeat_s));
    return out;
}

RunRecord ProjectFile::run(std::int64_t id) const {
    Statement st(connection(), std::string(kRunColumns) + " WHERE id = ?1");
    st.bind_int64(1, id);
    if (!st.step("reading a run")) throw UserError("project file '" + path_.string() + "' has no run " + std::to_string(id));
    return read_run(st, unix_time_now(), options_.stale_heartbeat_s);
}

void ProjectFile::set_run_recipe(std::int64_t id, const std::string& recipe_name, const std::string& recipe_json) {
    require_writable("set a run's recipe");
    run(id);  // UserError for an unknown run
    const std::int64_t recipe_id = add_recipe(recipe_name, recipe_json);
    Statement st(connection(), "UPDATE runs SET recipe_id = ?2 WHERE id = ?1");
    st.bind_int64(1, id).bind_int64(2, recipe_id);
    st.run("setting the recipe of run " + std::to_string(id));
}

void ProjectFile::set_run_status(std::int64_t id, RunStatus status, const std::string& message) {
    require_writable("change a run's status");
    if (status == RunStatus::Created || status == RunStatus::Running)
        throw std::invalid_argument("set_run_status ends a run; a MetricWriter starts one");
    Transaction tx(connection(), "ending run " + std::to_string(id));
    const RunRecord current = run(id);
    if (current.status == RunStatus::Completed || current.status == RunStatus::Failed)
        throw UserError("run " + std::to_string(id) + " of '" + path_.string() + "' has already ended (" +
                        std::string(to_string(current.status)) + ")");
    if (current.status == RunStatus::Running && current.writer_alive && current.writer_pid != current_process().pid)
        throw UserError("run " + std::to_string(id) + " of '" + path_.string() + "' is being written by process " +
                        std::to_string(current.writer_pid.value_or(0)) + " on " + current.host);
    Statement st(connection(), "UPDATE runs SET status = ?2, message = ?3, ended_at = ?4 WHERE id = ?1");
    st.bind_int64(1, id).bind_text(2, to_string(status)).bind_text(3, message).bind_double(4, unix_time_now());
    st.run("ending run " + std::to_string(id));
    tx.commit();
}

void ProjectFile::delete_run(std::int64_t id) {
    require_writable("delete a run");
    const RunRecord r = run(id);
    if (r.status == RunStatus::Running && r.writer_alive)
        throw UserError("run " + std::to_string(id) + " of '" + path_.string() + "' is still being written; cannot delete it");
    Statement st(connection(), "DELETE FROM runs WHERE id = ?1");  // ON DELETE CASCADE takes the rest
    st.bind_int64(1, id).run("deleting run " + std::to_string(id));
}

std::vector<SeriesSummary> ProjectFile::metric_summaries(std::int64_t run_id) const {
    Statement st(connection(), "SELECT n.name, sum(c.point_count), min(c.min_step), max(c.max_step) "
                               "FROM metric_chunks c JOIN metric_names n ON n.id = c.name_id "
                               "WHERE c.run_id = ?1 GROUP BY c.name_id ORDER BY n.name");
    st.bind_int64(1, run_id);
    std::vector<SeriesSummary> out;
    while (st.step("summarising metrics"))
        out.push_back({st.column_text(0), st.column_int64(1), st.column_int64(2), st.column_int64(3)});
    return out;
}

MetricSeries ProjectFile::load_series(std::int64_t run_id, std::string_view name, std::optional<std::int64_t> after_step) const {
    // Chunks wholly at or before after_step are skipped by their max_step without reading
    // their points, so polling for new points costs little however long the run is.
    // Both statements run in one read transaction, so the count matches the chunks read, and
    // the vectors are sized once (growing them chunk by chunk cost a third of the load time).
    Transaction snapshot(connection(), "reading metric '" + std::string(name) + "'", Transaction::Kind::Deferred);
    const char* where = "WHERE c.run_id = ?1 AND c.name_id = (SELECT id FROM metric_names WHERE name = ?2) "
                        "AND (?3 IS NULL OR c.max_step > ?3)";
    Statement count(connection(), std::string("SELECT total(c.point_count) FROM metric_chunks c ") + where);
    count.bind_int64(1, run_id).bind_text(2, name).bind_optional_int64(3, after_step);
    ChunkPoints points;
    if (count.step("counting metric points")) {
        const auto n = static_cast<std::size_t>(count.column_double(0));
        points.steps.reserve(n);
        points.values.reserve(n);
        points.wall_times.reserve(n);
    }
    Statement st(connection(), std::string("SELECT c.point_count, c.points FROM metric_chunks c ") + where + " ORDER BY c.seq");
    st.bind_int64(1, run_id).bind_text(2, name).bind_optional_int64(3, after_step);
    while (st.step("reading metric '" + std::string(name) + "'")) {
        std::size_t bytes = 0;
        const void* blob = st.column_blob(1, bytes);
        decode_metric_chunk(blob, bytes, st.column_int64(0), points, path_);
    }
    MetricSeries out;
    out.name = std::string(name);
    finish_series(std::move(points), after_step, out);
    return out;
}

std::vector<MetricSeries> ProjectFile::load_metrics(std::int64_t run_id) const {
    // One query over all series of the run (same read transaction, so a consistent snapshot).
    Statement st(connection(), "SELECT n.name, c.point_count, c.points FROM metric_chunks c "
                               "JOIN metric_names n ON n.id = c.name_id WHERE c.run_id = ?1 ORDER BY n.name, c.seq");
    st.bind_int64(1, run_id);
    std::vector<MetricSeries> out;
    ChunkPoints points;
    auto finish_current = [&] {
        finish_series(std::move(points), std::nullopt, out.back());
        points = ChunkPoints{};
    };
    while (st.step("reading the metrics of run " + std::to_string(run_id))) {
        std::string name = st.column_text(0);
        if (out.empty() || name != out.back().name) {  // rows come grouped by name
            if (!out.empty()) finish_current();
            out.emplace_back();
            out.back().name = std::move(name);
        }
        std::size_t bytes = 0;
        const void* blob = st.column_blob(2, bytes);
        decode_metric_chunk(blob, bytes, st.column_int64(1), points, path_);
    }
    if (!out.empty()) finish_current();
    return out;
}

void ProjectFile::add_layer_stats(std::int64_t run_id, const std::vector<LayerStats>& stats) {
    require_writable("add layer statistics");
    require_run(run_id);
    for (const LayerStats& s : stats)
        if (!nlohmann::json::accept(s.outliers_json))
            throw UserError("the outlier summary of layer '" + s.layer + "' is not valid JSON");
    Transaction tx(connection(), "saving layer statistics of run " + std::to_string(run_id));
    Statement st(connection(), "INSERT INTO layer_stats(run_id, layer, kind, step, data, outliers, created_at) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    const double now = unix_time_now();
    for (const LayerStats& s : stats) {
        const std::vector<unsigned char> blob = encode_layer_stats_blob(s);
        st.bind_int64(1, run_id).bind_text(2, s.layer).bind_text(3, s.kind).bind_int64(4, s.step);
        st.bind_blob(5, blob.data(), blob.size()).bind_text(6, s.outliers_json).bind_double(7, now);
        st.run("saving layer statistics of '" + s.layer + "'");
    }
    tx.commit();
}

std::vector<LayerStats> ProjectFile::layer_stats(std::int64_t run_id, const std::optional<std::string>& layer) const {
    Statement st(connection(), std::string("SELECT layer, kind, step, data, outliers FROM layer_stats WHERE run_id = ?1") +
                                   (layer ? " AND layer = ?2" : "") + " ORDER BY layer, kind, step, id");
    st.bind_int64(1, run_id);
    if (layer) st.bind_text(2, *layer);
    std::vector<LayerStats> out;
    while (st.step("reading layer statistics")) {
        LayerStats s;
        s.layer = st.column_text(0);
        s.kind = st.column_text(1);
        s.step = st.column_int64(2);
        std::size_t bytes = 0;
        const void* blob = st.column_blob(3, bytes);
        decode_layer_stats_blob(blob, bytes, s, path_);
        s.outliers_json = st.column_text(4);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace ql::projects
