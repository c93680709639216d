// SPDX-License-Identifier: GPL-3.0-or-later
// Reading the function calls out of a model's output (docs/EVAL_SUITES.md "Tool calls"). Chat
// models write calls in a few families of forms; this accepts those and nothing looser:
//   Hermes / Qwen2.5   <tool_call>{"name": …, "arguments": {…}}</tool_call>, one or more blocks
//                      (a last block left open by the end of the output counts);
//   bare JSON          {"name": …, "arguments": {…}} (or "parameters", Llama 3.1's key), or a
//                      list of such objects, anywhere json_extraction's `first` finds it;
//   OpenAI             {"type": "function", "function": {"name": …, "arguments": …}}, a list of
//                      them, or a message {"tool_calls": [...]}; "arguments" may be a JSON string
//                      holding the object, as the OpenAI API sends it.
// Plain C++ (nlohmann_json).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ql::evaluation {

struct ParsedToolCall {
    std::string name;
    nlohmann::json arguments;      // the arguments object; null when missing or not an object
    bool arguments_parsed = false;  // an object was found (directly or inside a JSON string)
    std::string form;               // "tool_call_tag", "json" or "openai"
};

// The calls in `output` (valid UTF-8), in order; empty when there are none. With <tool_call>
// tags present only their contents are read.
std::vector<ParsedToolCall> parse_tool_calls(std::string_view output);

}  // namespace ql::evaluation
