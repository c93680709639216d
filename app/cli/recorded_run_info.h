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

}  // namespace ql::cli
