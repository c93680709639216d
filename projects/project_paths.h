// SPDX-License-Identifier: GPL-3.0-or-later
// How a project stores the paths of models and artifacts: files inside the project's folder
// (or below it) are stored relative to that folder, so a project moved or copied together with
// its models still finds them; files elsewhere keep their absolute path.
#pragma once

#include <filesystem>
#include <string>

namespace ql::projects {

struct StoredPath {
    std::string text;          // generic form ('/' separators)
    bool is_relative = false;  // relative to the project file's folder
};

// `file` may be relative to the current directory; it is made absolute and normalised first.
StoredPath store_path(const std::filesystem::path& project_folder, const std::filesystem::path& file);

// Where a stored path points now, given the project file's current folder.
std::filesystem::path resolve_path(const std::filesystem::path& project_folder, const StoredPath& stored);

}  // namespace ql::projects
