// SPDX-License-Identifier: GPL-3.0-or-later
// Where the built-in demo model lives and whether a folder holds a complete one (a demo folder:
// config.json, model.safetensors and quantlab.json, written last). Plain C++.
#pragma once

#include <string>

namespace ql {

// The demo folder's record file, written last by build_demo.
inline constexpr const char* kDemoRecordFile = "quantlab.json";

// $XDG_CACHE_HOME/quantlab/demo, or ~/.cache/quantlab/demo when XDG_CACHE_HOME is unset or
// empty (XDG Base Directory Specification).
std::string demo_model_dir();

// True when `folder` holds a complete demo model (quantlab.json is written last).
bool demo_model_complete(const std::string& folder);

}  // namespace ql
