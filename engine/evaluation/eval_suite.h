// SPDX-License-Identifier: GPL-3.0-or-later
// Eval suites as data (docs/EVAL_SUITES.md): a JSONL file, one item per line, each a prompt (or
// chat messages, optionally with tools) and a check that judges the generated text. Loading
// validates everything a check will need (regexes and JSON Schemas compiled, tools' parameter
// schemas compiled, variants pointing at items that exist), so checking cannot fail on the
// suite's side later. Plain C++ (nlohmann_json, PCRE2, valijson).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/evaluation/instruction_constraints.h"
#include "engine/evaluation/json_extraction.h"

namespace ql::text {
class TextRegex;
}

namespace ql::evaluation {

class JsonSchema;

// exact: the (normalised) output equals the (normalised) answer. Normalisations, applied in
// this order to both sides: strip (White_Space at both ends), strip_punctuation (White_Space and
// ASCII punctuation at both ends), lowercase (Unicode, Python's str.lower()).
struct ExactCheck {
    std::string answer;
    bool strip = true;
    bool strip_punctuation = false;
    bool lowercase = false;
};

// numeric: a number in the output (the first or the last one, "-?[0-9]+(,[0-9]{3})*(\.[0-9]+)?" with the
// thousands commas dropped) is within `tolerance` of `value`: |x - value| <= tolerance.
struct NumericCheck {
    double value = 0;
    double tolerance = 0;
    bool last = true;  // "position": "last" (the default) or "first"
};

// regex: the pattern matches somewhere in the output (PCRE2, UTF-8; \w and \s as Unicode's word
// and White_Space classes, text_regex.h).
struct RegexCheck {
    std::string pattern;
    std::shared_ptr<const text::TextRegex> regex;
};

// choice: the output names exactly one of `options` (each as a whole word; case-insensitive,
// except single-letter options, which must be written as given) and that one is `answer`.
struct ChoiceCheck {
    std::vector<std::string> options;
    std::string answer;
};

// contains: every (mode all) / at least one (mode any) of `strings` occurs in the output.
// not_contains: every (all) / at least one (any) of `strings` is absent. ignore_case compares
// Unicode-lowercased text.
struct ContainsCheck {
    std::vector<std::string> strings;
    bool all = true;
    bool ignore_case = false;
    bool negate = false;  // not_contains
};

// json_schema: the JSON the output holds (json_extraction.h, `extract`) is valid against the
// schema; with `expected` (an object), the output must be an object and each member of
// `expected` must equal the output's member of that name (values_equal() below); other members
// are left to the schema.
struct JsonSchemaCheck {
    nlohmann::json schema;
    std::shared_ptr<const JsonSchema> validator;
    JsonExtraction extract = JsonExtraction::first;
    std::optional<nlohmann::json> expected;  // an object
};

// tool_call: the output's first call (tool_calls.h) names `name` (name accuracy), and its
// arguments are valid against the parameters schema of `name` and each member of `arguments`
// equals the call's member of that name (argument accuracy, judged even when the name is wrong;
// extra members are left to the schema). The item passes when both hold.
struct ToolCallCheck {
    std::string name;
    nlohmann::json arguments;  // an object
};

struct InstructionsCheck {
    std::vector<InstructionConstraint> constraints;
};

using EvalCheck = std::variant<ExactCheck, NumericCheck, RegexCheck, ChoiceCheck, ContainsCheck, JsonSchemaCheck, ToolCallCheck,
                               InstructionsCheck>;

// The check's "type" as the file names it: exact, numeric, regex, choice, contains,
// not_contains, json_schema, tool_call, instructions.
std::string check_type(const EvalCheck& check);

// A function the model may call: {"type": "function", "function": {"name", "description",
// "parameters"}} (the OpenAI / transformers form).
struct ToolSpec {
    std::string name;
    std::shared_ptr<const JsonSchema> parameters;  // compiled "parameters" (an empty schema when absent)
};

struct EvalItem {
    std::string id;
    std::string category;
    std::optional<std::string> prompt;     // either this ...
    nlohmann::ordered_json messages;       // ... or the chat messages (an array), as written
    nlohmann::ordered_json tools;          // the tools array as written, or null
    std::vector<ToolSpec> tool_specs;      // the same, compiled
    std::string variant_of;                // id of the item this one is a variant of, or ""
    std::string variant;                   // typo, distractor, long_context, reordered_options ... or ""
    std::optional<int64_t> max_tokens;
    EvalCheck check;
    nlohmann::ordered_json check_json;     // the check object as written
    int64_t line = 0;                      // 1-based line in the file

    // The conversation as chat messages: `messages`, or [{"role": "user", "content": prompt}].
    nlohmann::ordered_json conversation() const;
    const ToolSpec* tool(const std::string& name) const;  // nullptr when not offered
};

struct EvalSuite {
    std::string source;  // the file (or the name given to parse_eval_suite)
    std::string sha256;  // of the file's bytes, 64 lowercase hex digits
    std::vector<EvalItem> items;

    // Categories in order of first appearance.
    std::vector<std::string> categories() const;
    const EvalItem* find(const std::string& id) const;  // nullptr when absent
};

// Reads and validates a suite. UserError "FILE:LINE: FIELD: what was expected" for a bad line
// (FIELD is the key path, e.g. "check.tolerance", "messages[1].role"); "FILE: ..." for a
// problem of the whole file (no items).
EvalSuite load_eval_suite(const std::string& path);
EvalSuite parse_eval_suite(const std::string& bytes, const std::string& source);

// JSON equality as the checks use it (json_schema's `expected`, tool_call's `arguments`):
// numbers by value (1 == 1.0), strings after trimming White_Space and Unicode lowercasing,
// arrays element by element, objects member by member with the same keys, the rest exactly.
bool values_equal(const nlohmann::json& expected, const nlohmann::json& actual);

}  // namespace ql::evaluation
