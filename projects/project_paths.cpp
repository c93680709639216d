// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/project_paths.h"

namespace ql::projects {

namespace fs = std::filesystem;

StoredPath store_path(const fs::path& project_folder, const fs::path& file) {
    // weakly_canonical resolves symlinks of the parts that exist, so a project opened through a
    // symlinked folder still recognises its own models as "inside".
    const fs::path folder = fs::weakly_canonical(fs::absolute(project_folder));
    const fs::path target = fs::weakly_canonical(fs::absolute(file));
    const fs::path relative = target.lexically_relative(folder);
    if (!relative.empty() && *relative.begin() != ".." && relative.is_relative())
        return {relative.generic_string(), true};
    return {target.generic_string(), false};
}

fs::path resolve_path(const fs::path& project_folder, const StoredPath& stored) {
    const fs::path p(stored.text);
    return stored.is_relative ? (project_folder / p).lexically_normal() : p;
}

}  // namespace ql::projects
