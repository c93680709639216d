// SPDX-License-Identifier: GPL-3.0-or-later
// The catalogue rows of a project besides runs: models, recipes, artifacts and notes, as plain
// values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "projects/project_paths.h"

namespace ql::projects {

struct ModelRecord {
    std::int64_t id = 0;
    std::string name;
    StoredPath path;                 // relative to the project folder when inside it
    std::string content_sha256;      // see content_hash.h (a folder hashes its file list)
    std::int64_t size_bytes = 0;
    std::string architecture_json = "{}";  // architecture summary (layers, shapes, parameters)
    double added_at = 0.0;           // Unix seconds (UTC)
};

struct RecipeRecord {
    std::int64_t id = 0;
    std::string name;
    std::string json;                // the recipe exactly as given (validated JSON)
    double created_at = 0.0;
};

struct ArtifactRecord {
    std::int64_t id = 0;
    std::optional<std::int64_t> run_id;
    std::string kind;                // "hf-modelopt", "gguf", "fakequant", "report" …
    StoredPath path;
    std::string sha256;
    std::int64_t size_bytes = 0;
    double created_at = 0.0;
};

struct NoteRecord {
    std::int64_t id = 0;
    std::optional<std::int64_t> run_id;  // empty: a note on the whole project
    std::string text;
    double created_at = 0.0;
    double updated_at = 0.0;
};

}  // namespace ql::projects
