// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/recorded_run_info.h"

#include <filesystem>
#include <tuple>
#include <utility>

#include "engine/api/ptq_api.h"

namespace ql::cli {

projects::ProjectRunInfo recorded_run_info(const ArgParser& p, std::string kind, std::string name,
                                           const std::string& model, const std::string& recipe,
                                           const std::string& kv_cache, const std::string& rotate) {
    projects::ProjectRunInfo info;
    info.kind = std::move(kind);
    info.name = std::move(name);
    if (p.has("--project")) {
        info.model_name = model;
        info.model_path = resolved_model_folder(model);
        if (!recipe.empty()) std::tie(info.recipe_name, info.recipe_json) = recipe_name_and_json(recipe, kv_cache, rotate);
    }
    return info;
}

std::string path_label(const std::string& path) {
    std::filesystem::path p(path);
    if (!p.has_filename()) p = p.parent_path();  // "folder/" names the folder
    const std::string name = p.filename().string();
    return name.empty() ? path : name;
}

}  // namespace ql::cli
