// SPDX-License-Identifier: GPL-3.0-or-later
// Real models QuantLab knows by name and where they are kept once fetched: the model cache,
// $XDG_CACHE_HOME/quantlab/models (or ~/.cache/quantlab/models), which scripts/fetch-real-model
// fills (scripts/quantlab runs it once). The GUI's Open Model dialog offers them beside the demo;
// the CLI opens them by path. Plain C++.
#pragma once

#include <string>
#include <vector>

namespace ql {

// $XDG_CACHE_HOME/quantlab/models, or ~/.cache/quantlab/models.
std::string model_cache_dir();

struct KnownModel {
    std::string name;         // "SmolLM2-135M-Instruct"
    std::string description;  // one line: what it is, its format and licence
    std::string path;         // where it is (or would be) in the model cache
    std::string fetch_hint;   // how to get it when it is missing
    bool present = false;     // the file exists
};

// The real models, in the order the dialog lists them.
std::vector<KnownModel> known_models();

}  // namespace ql
