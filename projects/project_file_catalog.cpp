// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectFile: models, recipes, artifacts and notes.
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "projects/content_hash.h"
#include "projects/project_file.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"
#include "projects/wall_clock.h"

namespace ql::projects {

namespace fs = std::filesystem;

namespace {

void require_json(const std::string& text, const std::string& what) {
    if (!nlohmann::json::accept(text)) throw UserError(what + " is not valid JSON");
}

ModelRecord read_model(const Statement& st) {
    ModelRecord m;
    m.id = st.column_int64(0);
    m.name = st.column_text(1);
    m.path = {st.column_text(2), st.column_int64(3) != 0};
    m.content_sha256 = st.column_text(4);
    m.size_bytes = st.column_int64(5);
    m.architecture_json = st.column_text(6);
    m.added_at = st.column_double(7);
    return m;
}

constexpr const char* kModelColumns =
    "SELECT id, name, path, path_is_relative, content_sha256, size_bytes, architecture, added_at FROM models";

ArtifactRecord read_artifact(const Statement& st) {
    ArtifactRecord a;
    a.id = st.column_int64(0);
    a.run_id = st.column_optional_int64(1);
    a.kind = st.column_text(2);
    a.path = {st.column_text(3), st.column_int64(4) != 0};
    a.sha256 = st.column_text(5);
    a.size_bytes = st.column_int64(6);
    a.created_at = st.column_double(7);
    return a;
}

constexpr const char* kArtifactColumns =
    "SELECT id, run_id, kind, path, path_is_relative, sha256, size_bytes, created_at FROM artifacts";

}  // namespace

// --- models ---------------------------------------------------------------------------------

std::int64_t ProjectFile::add_model(const std::string& name, const fs::path& path, const std::string& architecture_json) {
    require_writable("add a model");
    require_json(architecture_json, "the architecture summary of model '" + name + "'");
    const ContentHash hash = hash_content(path);  // before the transaction: it may take a while
    const StoredPath stored = store_path(folder(), path);
    Statement st(connection(), "INSERT INTO models(name, path, path_is_relative, content_sha256, size_bytes, "
                               "architecture, added_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind_text(1, name).bind_text(2, stored.text).bind_int64(3, stored.is_relative).bind_text(4, hash.sha256);
    st.bind_int64(5, static_cast<std::int64_t>(hash.size_bytes)).bind_text(6, architecture_json).bind_double(7, unix_time_now());
    st.run("adding model '" + name + "'");
    return connection().last_insert_rowid();
}

std::vector<ModelRecord> ProjectFile::models() const {
    Statement st(connection(), std::string(kModelColumns) + " ORDER BY id");
    std::vector<ModelRecord> out;
    while (st.step("listing models")) out.push_back(read_model(st));
    return out;
}

ModelRecord ProjectFile::model(std::int64_t id) const {
    Statement st(connection(), std::string(kModelColumns) + " WHERE id = ?1");
    st.bind_int64(1, id);
    if (!st.step("reading a model"))
        throw UserError("project file '" + path_.string() + "' has no model " + std::to_string(id));
    return read_model(st);
}

fs::path ProjectFile::model_path(std::int64_t id) const {
    const ModelRecord m = model(id);
    const fs::path where = resolve_path(folder(), m.path);
    std::error_code ec;
    if (fs::exists(where, ec)) return where;
    if (m.path.is_relative)
        throw UserError("model '" + m.name + "' of project '" + path_.string() + "' is missing: it was stored as '" +
                        m.path.text + "' relative to the project's folder, and '" + where.string() +
                        "' does not exist. Move the model together with the project, or relink it");
    throw UserError("model '" + m.name + "' of project '" + path_.string() + "' is missing: '" + where.string() +
                    "' does not exist. Put it back, or relink the model to where it is now");
}

void ProjectFile::relink_model(std::int64_t id, const fs::path& new_path) {
    require_writable("relink a model");
    const ModelRecord m = model(id);
    const ContentHash hash = hash_content(new_path);
    if (hash.sha256 != m.content_sha256)
        throw UserError("cannot relink model '" + m.name + "' to '" + new_path.string() +
                        "': its content differs from the recorded one (SHA-256 " + hash.sha256.substr(0, 12) +
                        "… instead of " + m.content_sha256.substr(0, 12) + "…)");
    const StoredPath stored = store_path(folder(), new_path);
    Statement st(connection(), "UPDATE models SET path = ?2, path_is_relative = ?3 WHERE id = ?1");
    st.bind_int64(1, id).bind_text(2, stored.text).bind_int64(3, stored.is_relative).run("relinking a model");
}

// --- recipes --------------------------------------------------------------------------------

std::int64_t ProjectFile::add_recipe(const std::string& name, const std::string& json) {
    require_writable("add a recipe");
    require_json(json, "recipe '" + name + "'");
    Statement st(connection(), "INSERT INTO recipes(name, json, created_at) VALUES (?1, ?2, ?3)");
    st.bind_text(1, name).bind_text(2, json).bind_double(3, unix_time_now()).run("adding recipe '" + name + "'");
    return connection().last_insert_rowid();
}

std::vector<RecipeRecord> ProjectFile::recipes() const {
    Statement st(connection(), "SELECT id, name, json, created_at FROM recipes ORDER BY id");
    std::vector<RecipeRecord> out;
    while (st.step("listing recipes"))
        out.push_back({st.column_int64(0), st.column_text(1), st.column_text(2), st.column_double(3)});
    return out;
}

RecipeRecord ProjectFile::recipe(std::int64_t id) const {
    Statement st(connection(), "SELECT id, name, json, created_at FROM recipes WHERE id = ?1");
    st.bind_int64(1, id);
    if (!st.step("reading a recipe"))
        throw UserError("project file '" + path_.string() + "' has no recipe " + std::to_string(id));
    return {st.column_int64(0), st.column_text(1), st.column_text(2), st.column_double(3)};
}

// --- artifacts ------------------------------------------------------------------------------

std::int64_t ProjectFile::add_artifact(std::optional<std::int64_t> run_id, const std::string& kind, const fs::path& path) {
    require_writable("add an artifact");
    if (run_id) require_run(*run_id);
    const ContentHash hash = hash_content(path);
    const StoredPath stored = store_path(folder(), path);
    Statement st(connection(), "INSERT INTO artifacts(run_id, kind, path, path_is_relative, sha256, size_bytes, created_at) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind_optional_int64(1, run_id).bind_text(2, kind).bind_text(3, stored.text).bind_int64(4, stored.is_relative);
    st.bind_text(5, hash.sha256).bind_int64(6, static_cast<std::int64_t>(hash.size_bytes)).bind_double(7, unix_time_now());
    st.run("adding an artifact");
    return connection().last_insert_rowid();
}

std::vector<ArtifactRecord> ProjectFile::artifacts(std::optional<std::int64_t> run_id) const {
    Statement st(connection(), std::string(kArtifactColumns) + (run_id ? " WHERE run_id = ?1" : "") + " ORDER BY id");
    if (run_id) st.bind_int64(1, *run_id);
    std::vector<ArtifactRecord> out;
    while (st.step("listing artifacts")) out.push_back(read_artifact(st));
    return out;
}

fs::path ProjectFile::verified_artifact_path(std::int64_t id) const {
    Statement st(connection(), std::string(kArtifactColumns) + " WHERE id = ?1");
    st.bind_int64(1, id);
    if (!st.step("reading an artifact"))
        throw UserError("project file '" + path_.string() + "' has no artifact " + std::to_string(id));
    const ArtifactRecord a = read_artifact(st);
    const fs::path where = resolve_path(folder(), a.path);
    std::error_code ec;
    if (!fs::exists(where, ec))
        throw UserError("artifact " + std::to_string(id) + " (" + a.kind + ") of project '" + path_.string() +
                        "' is missing: '" + where.string() + "' does not exist");
    const ContentHash now = hash_content(where);
    if (now.sha256 != a.sha256)
        throw UserError("artifact " + std::to_string(id) + " (" + a.kind + ") at '" + where.string() +
                        "' changed since it was recorded (SHA-256 differs)");
    return where;
}

// --- notes ----------------------------------------------------------------------------------

std::int64_t ProjectFile::add_note(std::optional<std::int64_t> run_id, const std::string& text) {
    require_writable("add a note");
    if (run_id) require_run(*run_id);
    const double now = unix_time_now();
    Statement st(connection(), "INSERT INTO notes(run_id, text, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)");
    st.bind_optional_int64(1, run_id).bind_text(2, text).bind_double(3, now).run("adding a note");
    return connection().last_insert_rowid();
}

void ProjectFile::update_note(std::int64_t id, const std::string& text) {
    require_writable("edit a note");
    Statement st(connection(), "UPDATE notes SET text = ?2, updated_at = ?3 WHERE id = ?1");
    st.bind_int64(1, id).bind_text(2, text).bind_double(3, unix_time_now()).run("editing a note");
    if (connection().changes() == 0)
        throw UserError("project file '" + path_.string() + "' has no note " + std::to_string(id));
}

std::vector<NoteRecord> ProjectFile::notes(std::optional<std::int64_t> run_id) const {
    Statement st(connection(), std::string("SELECT id, run_id, text, created_at, updated_at FROM notes") +
                                   (run_id ? " WHERE run_id = ?1" : "") + " ORDER BY id");
    if (run_id) st.bind_int64(1, *run_id);
    std::vector<NoteRecord> out;
    while (st.step("listing notes"))
        out.push_back({st.column_int64(0), st.column_optional_int64(1), st.column_text(2), st.column_double(3),
                       st.column_double(4)});
    return out;
}

}  // namespace ql::projects
