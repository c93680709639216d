// SPDX-License-Identifier: GPL-3.0-or-later
// The recipe presets of resources/presets/*.json, compiled in (resources/embed_presets.cmake):
// (name = file stem, JSON text), sorted by name.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ql {

const std::vector<std::pair<std::string, std::string>>& recipe_preset_texts();

}  // namespace ql
