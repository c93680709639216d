// SPDX-License-Identifier: GPL-3.0-or-later
// Where the built-in demo model lives and whether a folder holds a complete one (a demo folder:
// config.json, model.safetensors and quantlab.json, written last). Plain C++.
//
// Two places (docs/DATA.md "The demo model"):
// - the shipped demo, resources/demo/ of the source tree: the checkpoint QuantLab's own results
//   (docs/RESULTS.md) are measured on. MODEL = "demo" always means this one, on every machine.
// - a retrained demo, $XDG_CACHE_HOME/quantlab/demo: what `quantlab-cli demo --retrain` (and the
//   GUI's File > Retrain the Demo Model) writes by default. It is opened only by its path, so a
//   model trained on another CPU (another BLAS, other rounding, another model) never silently
//   replaces the one the documented numbers belong to.
#pragma once

#include <string>

namespace ql {

// The demo folder's record file, written last by build_demo.
inline constexpr const char* kDemoRecordFile = "quantlab.json";

// The shipped demo folder: <source tree>/resources/demo (compiled in).
std::string shipped_demo_dir();

// $XDG_CACHE_HOME/quantlab/demo, or ~/.cache/quantlab/demo when XDG_CACHE_HOME is unset or
// empty (XDG Base Directory Specification): where a retrained demo goes by default.
std::string retrained_demo_dir();

// True when `folder` holds a complete demo model (quantlab.json is written last).
bool demo_model_complete(const std::string& folder);

}  // namespace ql
