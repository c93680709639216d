// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/eval_checker.h"

#include <charconv>
#include <cmath>

#include "engine/evaluation/eval_text.h"
#include "engine/evaluation/json_schema.h"
#include "engine/evaluation/tool_calls.h"
#include "engine/text/text_regex.h"
#include "engine/text/unicode_text.h"

namespace ql::evaluation {
namespace {

std::string checker_quoted(std::string_view s) { return nlohmann::json(std::string(utf8_head(s, 80))).dump(); }

// Shortest round-trip text, independent of the C locale (Qt sets it from the environment).
std::string checker_number_text(double v) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof(buffer), v);
    return std::string(buffer, r.ptr);
}

std::string checker_normalise(std::string_view s, const ExactCheck& c) {
    if (c.strip) s = trim_white_space(s);
    if (c.strip_punctuation) s = trim_white_space_and_punctuation(s);
    return c.lowercase ? lowercase(s) : std::string(s);
}

// The first `max_errors` schema failures as one detail value; "valid" when none.
std::string checker_schema_verdict(const JsonSchema& schema, const nlohmann::json& value, bool& valid) {
    try {
        const auto errors = schema.errors(value, 3);
        valid = errors.empty();
        if (valid) return "valid";
        std::string out;
        for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e;
        return out;
    } catch (const std::runtime_error& e) {
        valid = false;
        return e.what();
    }
}

struct CheckVisitor {
    const EvalItem& item;
    const std::string& output;
    ItemOutcome& out;

    void operator()(const ExactCheck& c) const {
        const std::string got = checker_normalise(output, c), want = checker_normalise(c.answer, c);
        out.passed = got == want;
        out.details.push_back({"answer", out.passed, std::string(utf8_head(got, 200))});
    }

    void operator()(const NumericCheck& c) const {
        const std::vector<double> numbers = numbers_in(output);
        if (numbers.empty()) {
            out.details.push_back({"number", false, "no number"});
            return;
        }
        const double x = c.last ? numbers.back() : numbers.front();
        out.passed = std::fabs(x - c.value) <= c.tolerance;
        out.details.push_back({"number", out.passed, checker_number_text(x)});
    }

    void operator()(const RegexCheck& c) const {
        const auto matches = c.regex->find_all(output);
        out.passed = !matches.empty();
        out.details.push_back(
            {"match", out.passed,
             out.passed ? checker_quoted(std::string_view(output).substr(matches[0].first, matches[0].second - matches[0].first))
                        : "no match"});
    }

    void operator()(const ChoiceCheck& c) const {
        const std::string low = lowercase(output);
        std::vector<std::string> named;
        for (const auto& option : c.options) {
            const std::string o(trim_white_space(option));
            // A single letter ("A") must be written as given, or "a" the article would name it.
            const bool letter = o.size() == 1;
            if (letter ? contains_word(output, o) : contains_word(low, lowercase(o))) named.push_back(option);
        }
        out.passed = named.size() == 1 && named[0] == c.answer;
        std::string value;
        for (const auto& n : named) value += (value.empty() ? "" : ", ") + n;
        out.details.push_back({"named", out.passed, named.empty() ? "none" : value});
    }

    void operator()(const ContainsCheck& c) const {
        const std::string hay = c.ignore_case ? lowercase(output) : output;
        size_t present = 0;
        std::string missing, found;
        for (const auto& s : c.strings) {
            const bool in = hay.find(c.ignore_case ? lowercase(s) : s) != std::string::npos;
            present += in ? 1 : 0;
            (in ? found : missing) += ((in ? found : missing).empty() ? "" : ", ") + checker_quoted(s);
        }
        const size_t n = c.strings.size(), absent = n - present;
        if (!c.negate) out.passed = c.all ? present == n : present > 0;
        else out.passed = c.all ? absent == n : absent > 0;
        out.details.push_back({c.negate ? "absent" : "present", out.passed,
                               std::to_string(c.negate ? absent : present) + " of " + std::to_string(n) +
                                   (c.negate ? (found.empty() ? "" : "; found " + found) : (missing.empty() ? "" : "; missing " + missing))});
    }

    void operator()(const JsonSchemaCheck& c) const {
        const auto found = extract_json(output, c.extract);
        out.json_valid = false;
        if (!found) {
            out.details.push_back({"json", false, std::string("no JSON (") + json_extraction_name(c.extract) + ")"});
            return;
        }
        out.details.push_back({"json", true, std::string("found by ") + json_extraction_name(found->found_by)});
        bool valid = false;
        out.details.push_back({"schema", false, checker_schema_verdict(*c.validator, found->value, valid)});
        out.details.back().passed = valid;
        out.json_valid = valid;
        bool matches = true;
        if (c.expected) {
            std::string differ;
            for (const auto& [key, value] : c.expected->items()) {
                if (!found->value.is_object() || !found->value.contains(key) || !values_equal(value, found->value[key])) {
                    matches = false;
                    differ += (differ.empty() ? "" : ", ") + key;
                }
            }
            out.details.push_back({"expected", matches, matches ? "equal" : "differs in " + differ});
        }
        out.passed = valid && matches;
    }

    void operator()(const ToolCallCheck& c) const {
        const std::vector<ParsedToolCall> calls = parse_tool_calls(output);
        out.details.push_back({"calls", !calls.empty(), std::to_string(calls.size())});
        out.tool_name_correct = false;
        out.tool_arguments_correct = false;
        if (calls.empty()) return;
        const ParsedToolCall& call = calls.front();
        out.tool_name_correct = call.name == c.name;
        out.details.push_back({"tool_name", *out.tool_name_correct, call.name});
        bool valid = false;
        std::string verdict = "no arguments object";
        if (call.arguments_parsed) verdict = checker_schema_verdict(*item.tool(c.name)->parameters, call.arguments, valid);
        out.details.push_back({"arguments_schema", valid, verdict});
        bool matches = call.arguments_parsed;
        std::string differ;
        for (const auto& [key, value] : c.arguments.items()) {
            if (!call.arguments_parsed || !call.arguments.contains(key) || !values_equal(value, call.arguments[key])) {
                matches = false;
                differ += (differ.empty() ? "" : ", ") + key;
            }
        }
        out.details.push_back({"arguments", matches, matches ? "equal" : differ.empty() ? "no arguments object" : "differ in " + differ});
        out.tool_arguments_correct = valid && matches;
        out.passed = *out.tool_name_correct && *out.tool_arguments_correct;
    }

    void operator()(const InstructionsCheck& c) const {
        out.passed = true;
        for (const auto& constraint : c.constraints) {
            const ConstraintResult r = check_constraint(constraint, output);
            out.details.push_back({constraint_kind_name(r.kind), r.passed, r.measured});
            out.passed = out.passed && r.passed;
        }
    }
};

}  // namespace

std::vector<double> numbers_in(std::string_view text) {
    static const text::TextRegex number(kNumberPattern);
    std::vector<double> out;
    for (const auto& [b, e] : number.find_all(text)) {
        std::string digits;
        for (size_t i = b; i < e; ++i)
            if (text[i] != ',') digits += text[i];
        double v = 0;
        std::from_chars(digits.data(), digits.data() + digits.size(), v);  // locale-independent, unlike strtod
        out.push_back(v);
    }
    return out;
}

ItemOutcome check(const EvalItem& item, std::string_view output) {
    ItemOutcome out;
    out.id = item.id;
    out.category = item.category;
    out.check = check_type(item.check);
    out.variant_of = item.variant_of;
    out.variant = item.variant;
    out.output = text::utf8_lossy(output);
    std::visit(CheckVisitor{item, out.output, out}, item.check);
    return out;
}

}  // namespace ql::evaluation
