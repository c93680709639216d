// SPDX-License-Identifier: GPL-3.0-or-later
// Suffix test for C++17 (std::string::ends_with is C++20; the Debian LibTorch build is C++17).
#pragma once

#include <string_view>

namespace ql {

inline bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace ql
