// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/schema_migrations.h"

#include <stdexcept>
#include <string>

#include "engine/core/errors.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"

namespace ql::projects {
namespace {

// Version 1. Times are REAL seconds since the Unix epoch (UTC). JSON columns hold UTF-8 JSON
// text checked by the writer. Paths are relative to the project file's folder when
// path_is_relative = 1 (see project_paths.h). docs/PROJECT_FILES.md explains every column.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE project_info (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE models (
    id               INTEGER PRIMARY KEY,
    name             TEXT NOT NULL,
    path             TEXT NOT NULL,
    path_is_relative INTEGER NOT NULL CHECK (path_is_relative IN (0, 1)),
    content_sha256   TEXT NOT NULL,
    size_bytes       INTEGER NOT NULL,
    architecture     TEXT NOT NULL DEFAULT '{}',
    added_at         REAL NOT NULL
);

CREATE TABLE recipes (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    json       TEXT NOT NULL,
    created_at REAL NOT NULL
);

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY,
    kind               TEXT NOT NULL,
    name               TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN
                       ('created', 'running', 'completed', 'failed', 'cancelled', 'interrupted')),
    model_id           INTEGER REFERENCES models(id) ON DELETE SET NULL,
    recipe_id          INTEGER REFERENCES recipes(id) ON DELETE SET NULL,
    config             TEXT NOT NULL DEFAULT '{}',
    seed               INTEGER,
    host               TEXT NOT NULL DEFAULT '',
    quantlab_version   TEXT NOT NULL DEFAULT '',
    created_at         REAL NOT NULL,
    started_at         REAL,
    ended_at           REAL,
    writer_pid         INTEGER,
    writer_start_ticks INTEGER,
    writer_machine     TEXT,
    heartbeat_at       REAL,
    message            TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_status ON runs(status);

CREATE TABLE metric_names (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE metric_chunks (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name_id     INTEGER NOT NULL REFERENCES metric_names(id),
    seq         INTEGER NOT NULL,
    point_count INTEGER NOT NULL CHECK (point_count > 0),
    min_step    INTEGER NOT NULL,
    max_step    INTEGER NOT NULL,
    points      BLOB NOT NULL,
    UNIQUE (run_id, name_id, seq)
);

CREATE TABLE layer_stats (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    layer      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    step       INTEGER NOT NULL DEFAULT 0,
    data       BLOB NOT NULL,
    outliers   TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);
CREATE INDEX layer_stats_by_run ON layer_stats(run_id, layer, kind, step);

CREATE TABLE artifacts (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER REFERENCES runs(id) ON DELETE CASCADE,
    kind             TEXT NOT NULL,
    path             TEXT NOT NULL,
    path_is_relative INTEGER NOT NULL CHECK (path_is_relative IN (0, 1)),
    sha256           TEXT NOT NULL,
    size_bytes       INTEGER NOT NULL,
    created_at       REAL NOT NULL
);
CREATE INDEX artifacts_by_run ON artifacts(run_id);

CREATE TABLE notes (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER REFERENCES runs(id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX notes_by_run ON notes(run_id);
)sql";

// Version 2: experiments (docs/EXPERIMENTS.md, docs/PROJECT_FILES.md "experiments"). The runs
// of an experiment are ordinary runs; experiment_runs groups them by cell and replicate, holds the
// claim of the process making one (so several processes share a grid) and what it measured.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE experiments (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    identity_sha256 TEXT NOT NULL,
    spec            TEXT NOT NULL,
    manifests       TEXT NOT NULL DEFAULT '[]',
    created_at      REAL NOT NULL,
    UNIQUE (name, identity_sha256)
);

CREATE TABLE experiment_runs (
    experiment_id       INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    cell                TEXT NOT NULL,
    replicate           INTEGER NOT NULL CHECK (replicate >= 0),
    seed                INTEGER NOT NULL,
    run_id              INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    claim_pid           INTEGER,
    claim_start_ticks   INTEGER,
    claim_machine       TEXT,
    result              TEXT,
    updated_at          REAL NOT NULL,
    PRIMARY KEY (experiment_id, cell, replicate)
) WITHOUT ROWID;
)sql";

}  // namespace

const std::vector<MigrationStep>& schema_steps() {
    static const std::vector<MigrationStep> steps = {
        {1, kSchemaV1},
        {2, kSchemaV2},
    };
    return steps;
}

int current_schema_version() { return schema_steps().back().version; }

void migrate(Connection& connection, const std::vector<MigrationStep>& steps, const std::filesystem::path& backup) {
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (steps[i].version != static_cast<int>(i) + 1)
            throw std::logic_error("schema steps must be numbered 1, 2, 3 … without gaps");
    const int target = steps.empty() ? 0 : steps.back().version;
    const std::string file = connection.file().string();

    auto check_not_newer = [&](std::int64_t version) {
        if (version > target)
            throw UserError("project file '" + file + "' has schema version " + std::to_string(version) +
                            ", newer than this QuantLab reads (up to " + std::to_string(target) +
                            "); open it with a newer QuantLab. The file was not changed");
        if (version < 0) throw UserError("project file '" + file + "' has an invalid schema version " + std::to_string(version));
    };
    const std::int64_t before = connection.query_int("PRAGMA user_version", "reading the schema version");
    check_not_newer(before);
    if (before == target) return;

    if (before > 0 && !backup.empty()) {
        // VACUUM INTO cannot run inside a transaction, so the copy is taken first; a failed copy
        // stops the upgrade before anything changed.
        Statement copy(connection, "VACUUM INTO ?1");
        copy.bind_text(1, backup.string());
        copy.run("copying the project to '" + backup.string() + "' before upgrading its schema");
    }

    Transaction tx(connection, "upgrading the project schema");
    // Another process may have upgraded the file between the read above and our write lock.
    const std::int64_t from = connection.query_int("PRAGMA user_version", "reading the schema version");
    check_not_newer(from);
    for (const MigrationStep& step : steps) {
        if (step.version <= from) continue;
        connection.exec(step.sql, "upgrading the project schema to version " + std::to_string(step.version));
    }
    // Both pragmas write the database header inside the open transaction, so they commit or roll
    // back together with the steps.
    connection.exec("PRAGMA application_id = " + std::to_string(kProjectApplicationId), "marking the project file");
    connection.exec("PRAGMA user_version = " + std::to_string(target), "recording the schema version");
    tx.commit();
}

}  // namespace ql::projects
