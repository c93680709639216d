// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/demo_folder.h"

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace ql {

std::string shipped_demo_dir() { return QUANTLAB_SHIPPED_DEMO_DIR; }

std::string retrained_demo_dir() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return std::string(xdg) + "/quantlab/demo";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.cache/quantlab/demo";
}

bool demo_model_complete(const std::string& folder) {
    std::error_code ec;
    return fs::exists(folder + "/" + kDemoRecordFile, ec) && fs::exists(folder + "/config.json", ec) &&
           fs::exists(folder + "/model.safetensors", ec);
}

}  // namespace ql
