// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/json_extraction.h"

#include <cctype>
#include <vector>

namespace ql::evaluation {
namespace {

bool json_extraction_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view json_extraction_trim(std::string_view s) {
    while (!s.empty() && json_extraction_is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && json_extraction_is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The deepest bracket nesting of `s` outside JSON strings (a cheap pre-check, so that the
// parser never recurses deeper than the limit).
int json_extraction_depth(std::string_view s) {
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            deepest = std::max(deepest, ++depth);
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

// The end (one past the closing bracket) of the balanced {…} or […] that starts at s[begin],
// or npos when it is not closed, closed by the wrong bracket, or nested too deep.
size_t json_extraction_balanced_end(std::string_view s, size_t begin) {
    std::vector<char> open;
    bool in_string = false;
    for (size_t i = begin; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (static_cast<int>(open.size()) >= kExtractedJsonMaxDepth) return std::string_view::npos;
            open.push_back(c == '{' ? '}' : ']');
        } else if (c == '}' || c == ']') {
            if (open.empty() || open.back() != c) return std::string_view::npos;
            open.pop_back();
            if (open.empty()) return i + 1;
        }
    }
    return std::string_view::npos;
}

std::optional<ExtractedJson> json_extraction_found(std::string_view text, JsonExtraction by) {
    auto value = parse_json_text(text);
    if (!value) return std::nullopt;
    return ExtractedJson{std::move(*value), by, std::string(text)};
}

std::optional<ExtractedJson> json_extraction_fenced(std::string_view s) {
    size_t pos = 0;
    while ((pos = s.find("```", pos)) != std::string_view::npos) {
        size_t tag_end = pos + 3;
        while (tag_end < s.size() && (std::isalnum(static_cast<unsigned char>(s[tag_end])) || s[tag_end] == '_' ||
                                      s[tag_end] == '-' || s[tag_end] == '+'))
            ++tag_end;
        std::string tag(s.substr(pos + 3, tag_end - pos - 3));
        for (char& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t close = s.find("```", tag_end);
        if (tag.empty() || tag == "json") {
            const size_t body_end = close == std::string_view::npos ? s.size() : close;
            return json_extraction_found(json_extraction_trim(s.substr(tag_end, body_end - tag_end)), JsonExtraction::fenced);
        }
        if (close == std::string_view::npos) return std::nullopt;
        pos = close + 3;  // another language's fence: skip it whole
    }
    return std::nullopt;
}

std::optional<ExtractedJson> json_extraction_braces(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '{' && s[i] != '[') continue;
        const size_t end = json_extraction_balanced_end(s, i);
        if (end == std::string_view::npos) continue;
        if (auto found = json_extraction_found(s.substr(i, end - i), JsonExtraction::braces)) return found;
    }
    return std::nullopt;
}

}  // namespace

const char* json_extraction_name(JsonExtraction e) {
    switch (e) {
        case JsonExtraction::whole: return "whole";
        case JsonExtraction::fenced: return "fenced";
        case JsonExtraction::braces: return "braces";
        case JsonExtraction::first: return "first";
    }
    return "first";
}

std::optional<JsonExtraction> parse_json_extraction(std::string_view name) {
    for (JsonExtraction e : {JsonExtraction::whole, JsonExtraction::fenced, JsonExtraction::braces, JsonExtraction::first})
        if (name == json_extraction_name(e)) return e;
    return std::nullopt;
}

std::optional<nlohmann::json> parse_json_text(std::string_view text) {
    text = json_extraction_trim(text);
    if (text.empty() || json_extraction_depth(text) > kExtractedJsonMaxDepth) return std::nullopt;
    nlohmann::json value = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) return std::nullopt;
    return value;
}

std::optional<ExtractedJson> extract_json(std::string_view output, JsonExtraction where) {
    switch (where) {
        case JsonExtraction::whole: return json_extraction_found(json_extraction_trim(output), JsonExtraction::whole);
        case JsonExtraction::fenced: return json_extraction_fenced(output);
        case JsonExtraction::braces: return json_extraction_braces(output);
        case JsonExtraction::first:
            if (auto j = json_extraction_found(json_extraction_trim(output), JsonExtraction::whole)) return j;
            if (auto j = json_extraction_fenced(output)) return j;
            return json_extraction_braces(output);
    }
    return std::nullopt;
}

}  // namespace ql::evaluation
