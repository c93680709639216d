// SPDX-License-Identifier: GPL-3.0-or-later
// JSON for chat templates: the inputs (messages, tools, extra variables) arrive as JSON and become
// template values as Python's json.loads makes them (objects -> dict, arrays -> list, integers ->
// int, other numbers -> float); the `tojson` filter writes values as transformers' own filter does
// (transformers/utils/chat_template_utils.py, tojson = json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=sort_keys)).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

// `where` names the input (e.g. "messages") in the error for values Python's json cannot hold.
Value value_from_json(const nlohmann::ordered_json& j, const std::string& where);

struct JsonDumpOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // json.dumps indent (an int n arrives as n spaces)
    std::string item_separator = ", ";   // json.dumps defaults; "," when indent is given
    std::string key_separator = ": ";
    bool sort_keys = false;
};

// json.dumps(v, ...) byte for byte (CPython Lib/json/encoder.py and Modules/_json.c); raises
// TypeError for values JSON cannot hold (Undefined, namespaces, generators ...).
std::string json_dumps(Runtime& rt, const Value& v, const JsonDumpOptions& options);

}  // namespace ql::jinja
