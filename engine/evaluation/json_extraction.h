// SPDX-License-Identifier: GPL-3.0-or-later
// Finding the JSON value in a model's output (docs/EVAL_SUITES.md "Where the JSON is"): models
// wrap JSON in prose or Markdown fences, so a checker first has to say which text it parses.
// Plain C++ (nlohmann_json).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace ql::evaluation {

// Where the JSON is taken from:
//   whole   the output with surrounding whitespace removed;
//   fenced  the body of the first Markdown code fence ```json … ``` (or a fence without a
//           language tag, or one tagged JSON/Json); an unclosed fence runs to the end;
//   braces  the first balanced {…} or […] (brackets inside JSON strings do not count) that
//           parses, scanning left to right;
//   first   whole, then fenced, then braces: the first of them that parses (the default).
enum class JsonExtraction { whole, fenced, braces, first };

const char* json_extraction_name(JsonExtraction e);
// nullopt for an unknown name.
std::optional<JsonExtraction> parse_json_extraction(std::string_view name);

// The deepest nesting a candidate may have (the strict parser's limit, strict_json.h); deeper
// text is not parsed (nothing in a short model output needs more).
constexpr int kExtractedJsonMaxDepth = 128;

struct ExtractedJson {
    nlohmann::json value;
    JsonExtraction found_by = JsonExtraction::whole;  // whole, fenced or braces
    std::string text;                                 // the text that parsed
};

// The JSON value in `output` (valid UTF-8), or nullopt when the chosen place holds none.
// Duplicate keys keep the last value, as Python's json.loads does.
std::optional<ExtractedJson> extract_json(std::string_view output, JsonExtraction where = JsonExtraction::first);

// `text` parsed as one JSON value (surrounding whitespace allowed), or nullopt: not JSON, or
// nested deeper than kExtractedJsonMaxDepth.
std::optional<nlohmann::json> parse_json_text(std::string_view text);

}  // namespace ql::evaluation
