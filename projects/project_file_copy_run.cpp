// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectFile::copy_run_from: one run, with everything that belongs to it, from one project
// into another (or into the same one, as a duplicate).
#include "engine/core/errors.h"
#include "projects/project_file.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"

namespace ql::projects {

namespace fs = std::filesystem;

namespace {

// ATTACH and DETACH cannot run inside a transaction, so the attachment outlives it and is
// undone here whatever happens in between.
class Attachment {
public:
    Attachment(Connection& connection, const fs::path& file) : connection_(connection) {
        Statement st(connection_, "ATTACH DATABASE ?1 AS src");
        st.bind_text(1, sqlite_file_uri(file, "mode=ro"));
        st.run("attaching '" + file.string() + "' to copy a run from it");
    }
    ~Attachment() {
        try {
            connection_.exec("DETACH DATABASE src", "detaching the source project");
        } catch (...) {  // a destructor must not throw; the connection drops it when closed anyway
        }
    }
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

private:
    Connection& connection_;
};

}  // namespace

std::int64_t ProjectFile::copy_run_from(const fs::path& source_path, std::int64_t run_id) {
    require_writable("copy a run into it");
    // Opening the source validates it (a project, a schema we read) and gives its run, model,
    // recipe and artifacts as values, with paths resolved against the source's folder.
    const ProjectFile source = open(source_path, OpenMode::ReadOnly);
    const RunRecord run = source.run(run_id);
    std::error_code ec;
    const bool same_file = fs::equivalent(source.path(), path_, ec);
    std::optional<Attachment> attachment;
    if (!same_file) attachment.emplace(connection(), source.path());
    const std::string src = same_file ? "main" : "src";

    Transaction tx(connection(), "copying run " + std::to_string(run_id) + " from '" + source.path().string() + "'");

    // The model and recipe: reuse an identical one here, else copy the row (paths re-stored
    // relative to this project's folder where they fall inside it).
    std::optional<std::int64_t> model_id;
    if (run.model_id) {
        const ModelRecord m = source.model(*run.model_id);
        const fs::path where = resolve_path(source.folder(), m.path);
        const StoredPath stored = store_path(folder(), where);
        Statement find(connection(), "SELECT id FROM models WHERE content_sha256 = ?1 AND path = ?2 AND path_is_relative = ?3");
        find.bind_text(1, m.content_sha256).bind_text(2, stored.text).bind_int64(3, stored.is_relative);
        if (find.step("looking for the run's model")) {
            model_id = find.column_int64(0);
        } else {
            Statement add(connection(), "INSERT INTO models(name, path, path_is_relative, content_sha256, size_bytes, "
                                        "architecture, added_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
            add.bind_text(1, m.name).bind_text(2, stored.text).bind_int64(3, stored.is_relative).bind_text(4, m.content_sha256);
            add.bind_int64(5, m.size_bytes).bind_text(6, m.architecture_json).bind_double(7, m.added_at);
            add.run("copying the run's model");
            model_id = connection().last_insert_rowid();
        }
    }
    std::optional<std::int64_t> recipe_id;
    if (run.recipe_id) {
        const RecipeRecord r = source.recipe(*run.recipe_id);
        Statement find(connection(), "SELECT id FROM recipes WHERE name = ?1 AND json = ?2");
        find.bind_text(1, r.name).bind_text(2, r.json);
        if (find.step("looking for the run's recipe")) {
            recipe_id = find.column_int64(0);
        } else {
            Statement add(connection(), "INSERT INTO recipes(name, json, created_at) VALUES (?1, ?2, ?3)");
            add.bind_text(1, r.name).bind_text(2, r.json).bind_double(3, r.created_at).run("copying the run's recipe");
            recipe_id = connection().last_insert_rowid();
        }
    }

    // The run itself. A copy has no writer: a run copied while running is recorded as
    // interrupted at the moment of copying, since the copy will never see its later points.
    const bool was_running = run.status == RunStatus::Running;
    Statement add_run(connection(),
                      "INSERT INTO runs(kind, name, status, model_id, recipe_id, config, seed, host, quantlab_version, "
                      "created_at, started_at, ended_at, heartbeat_at, message) "
                      "SELECT kind, name, ?2, ?3, ?4, config, seed, host, quantlab_version, created_at, started_at, "
                      "coalesce(ended_at, heartbeat_at), heartbeat_at, ?5 FROM " + src + ".runs WHERE id = ?1");
    add_run.bind_int64(1, run_id).bind_text(2, was_running ? "interrupted" : to_string(run.status));
    add_run.bind_optional_int64(3, model_id).bind_optional_int64(4, recipe_id);
    add_run.bind_text(5, was_running ? "copied from '" + source.path().string() + "' while it was running" : run.message);
    add_run.run("copying the run");
    const std::int64_t new_id = connection().last_insert_rowid();

    // Metrics: names are matched by text, chunks copied as they are (blobs need no decoding).
    Statement names(connection(), "INSERT OR IGNORE INTO main.metric_names(name) SELECT DISTINCT n.name FROM " + src +
                                      ".metric_chunks c JOIN " + src + ".metric_names n ON n.id = c.name_id WHERE c.run_id = ?1");
    names.bind_int64(1, run_id).run("copying metric names");
    Statement chunks(connection(),
                     "INSERT INTO main.metric_chunks(run_id, name_id, seq, point_count, min_step, max_step, points) "
                     "SELECT ?2, d.id, c.seq, c.point_count, c.min_step, c.max_step, c.points FROM " + src +
                     ".metric_chunks c JOIN " + src + ".metric_names n ON n.id = c.name_id "
                     "JOIN main.metric_names d ON d.name = n.name WHERE c.run_id = ?1");
    chunks.bind_int64(1, run_id).bind_int64(2, new_id).run("copying metrics");

    Statement stats(connection(), "INSERT INTO main.layer_stats(run_id, layer, kind, step, data, outliers, created_at) "
                                  "SELECT ?2, layer, kind, step, data, outliers, created_at FROM " + src +
                                  ".layer_stats WHERE run_id = ?1 ORDER BY id");
    stats.bind_int64(1, run_id).bind_int64(2, new_id).run("copying layer statistics");

    Statement notes(connection(), "INSERT INTO main.notes(run_id, text, created_at, updated_at) "
                                  "SELECT ?2, text, created_at, updated_at FROM " + src + ".notes WHERE run_id = ?1 ORDER BY id");
    notes.bind_int64(1, run_id).bind_int64(2, new_id).run("copying notes");

    Statement artifact(connection(), "INSERT INTO main.artifacts(run_id, kind, path, path_is_relative, sha256, size_bytes, "
                                     "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    for (const ArtifactRecord& a : source.artifacts(run_id)) {
        const StoredPath stored = store_path(folder(), resolve_path(source.folder(), a.path));
        artifact.bind_int64(1, new_id).bind_text(2, a.kind).bind_text(3, stored.text).bind_int64(4, stored.is_relative);
        artifact.bind_text(5, a.sha256).bind_int64(6, a.size_bytes).bind_double(7, a.created_at);
        artifact.run("copying an artifact record");
    }
    tx.commit();
    return new_id;
}

}  // namespace ql::projects
