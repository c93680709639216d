// SPDX-License-Identifier: GPL-3.0-or-later
// What a CLI command records about its run when it is given --project: one way for every
// command, so the same run looks the same in the project whichever command wrote it.
#pragma once

#include <string>

#include "app/cli/arg_parser.h"
#include "projects/project_run_recorder.h"

namespace ql::cli {

// kind and name as shown in the project; with --project also the model (its resolved folder)
// and, when `recipe` is not empty, the recipe's name and JSON. Without --project nothing is
// resolved (a model lookup costs time and needs no answer then). config_json stays "{}" for the
// caller to fill. kv_cache / rotate: the --kv-cache / --rotate overlays (recorded in the recipe).
projects::ProjectRunInfo recorded_run_info(const ArgParser& p, std::string kind, std::string name,
                                           const std::string& model, const std::string& recipe = {},
                                           const std::string& kv_cache = {}, const std::string& rotate = {});

// How a run names a model or data file it was given as a path: its last component
// ("SmolLM2-135M-Instruct.Q4_1.gguf", "train.txt"), so run lists stay readable; the whole path is
// recorded beside it (model_name / model_path, config_json). "demo" and ids stay as given.
std::string path_label(const std::string& path);

}  // namespace ql::cli
