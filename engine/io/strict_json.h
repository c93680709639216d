// SPDX-License-Identifier: GPL-3.0-or-later
// JSON parsing for files that may lie (engine-internal; needs nlohmann_json). nlohmann::json
// alone keeps the last of duplicate keys, stops at a NUL byte as if the input ended, and nests
// as deep as memory allows; this parser rejects all three, as serde_json (the safetensors
// reference) does.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ql {

// Thrown with a short reason ("duplicate key \"a\"", nlohmann's syntax error text, ...).
class StrictJsonError : public std::runtime_error {
public:
    explicit StrictJsonError(const std::string& what) : std::runtime_error(what) {}
};

// serde_json's default recursion limit.
constexpr int kStrictJsonMaxDepth = 128;

nlohmann::json parse_strict_json(const char* begin, const char* end);

// `name` quoted and escaped as a JSON string, for error messages (control characters cannot
// garble the message; invalid UTF-8 is replaced; very long names are cut).
std::string quoted_name(const std::string& name);

}  // namespace ql
