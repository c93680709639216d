// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/tool_calls.h"

#include <optional>

#include "engine/evaluation/json_extraction.h"

namespace ql::evaluation {
namespace {

constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";

// One call object in any accepted form, or nullopt when `j` is not one.
std::optional<ParsedToolCall> tool_call_from_object(const nlohmann::json& j, const std::string& form) {
    if (!j.is_object()) return std::nullopt;
    const nlohmann::json* body = &j;
    std::string call_form = form;
    if (j.contains("function") && j["function"].is_object()) {  // OpenAI: {"type": "function", "function": {...}}
        if (j.contains("type") && j["type"] != "function") return std::nullopt;
        body = &j["function"];
        call_form = "openai";
    }
    if (!body->contains("name") || !(*body)["name"].is_string()) return std::nullopt;
    ParsedToolCall call;
    call.name = (*body)["name"].get<std::string>();
    call.form = call_form;
    const char* key = body->contains("arguments") ? "arguments" : body->contains("parameters") ? "parameters" : nullptr;
    if (key) {
        const nlohmann::json& args = (*body)[key];
        if (args.is_object()) {
            call.arguments = args;
            call.arguments_parsed = true;
        } else if (args.is_string()) {  // OpenAI sends the arguments object as a JSON string
            if (auto parsed = parse_json_text(args.get<std::string>()); parsed && parsed->is_object()) {
                call.arguments = std::move(*parsed);
                call.arguments_parsed = true;
            }
        }
    }
    return call;
}

// The calls a JSON value holds: one call, a list of calls, or an OpenAI message's "tool_calls".
void tool_calls_from_value(const nlohmann::json& j, const std::string& form, std::vector<ParsedToolCall>& out) {
    if (j.is_array()) {
        for (const auto& element : j)
            if (auto call = tool_call_from_object(element, form)) out.push_back(std::move(*call));
        return;
    }
    if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) {
        for (const auto& element : j["tool_calls"])
            if (auto call = tool_call_from_object(element, "openai")) out.push_back(std::move(*call));
        return;
    }
    if (auto call = tool_call_from_object(j, form)) out.push_back(std::move(*call));
}

}  // namespace

std::vector<ParsedToolCall> parse_tool_calls(std::string_view output) {
    std::vector<ParsedToolCall> calls;
    size_t pos = output.find(kToolCallOpen);
    if (pos != std::string_view::npos) {
        while (pos != std::string_view::npos) {
            const size_t body = pos + kToolCallOpen.size();
            const size_t close = output.find(kToolCallClose, body);
            const size_t end = close == std::string_view::npos ? output.size() : close;
            if (auto j = extract_json(output.substr(body, end - body), JsonExtraction::first))
                tool_calls_from_value(j->value, "tool_call_tag", calls);
            if (close == std::string_view::npos) break;
            pos = output.find(kToolCallOpen, close + kToolCallClose.size());
        }
        return calls;
    }
    if (auto j = extract_json(output, JsonExtraction::first)) tool_calls_from_value(j->value, "json", calls);
    return calls;
}

}  // namespace ql::evaluation
