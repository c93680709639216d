// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/eval_suite.h"

#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "engine/core/errors.h"
#include "engine/evaluation/eval_text.h"
#include "engine/evaluation/json_schema.h"
#include "engine/io/sha256.h"
#include "engine/io/strict_json.h"
#include "engine/io/utf8.h"
#include "engine/io/whole_file.h"
#include "engine/text/text_regex.h"

namespace ql::evaluation {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kSuiteMaxTokens = 1 << 20;

// A problem with one field of one line; load turns it into "FILE:LINE: FIELD: message".
struct SuiteFieldError {
    std::string field, message;
};
[[noreturn]] void suite_fail(const std::string& field, const std::string& message) { throw SuiteFieldError{field, message}; }

std::string suite_quoted(const std::string& s) { return quoted_name(s); }

bool suite_name_chars(const std::string& s, bool allow_dots) {
    if (s.empty() || s.size() > 128) return false;
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                        (allow_dots && (c == '.' || c == ':'));
        if (!ok) return false;
    }
    return true;
}

const std::string& suite_string(const json& j, const std::string& field, bool allow_empty = false) {
    if (!j.is_string()) suite_fail(field, "expected a string");
    if (!allow_empty && j.get_ref<const std::string&>().empty()) suite_fail(field, "expected a non-empty string");
    return j.get_ref<const std::string&>();
}

double suite_finite(const json& j, const std::string& field) {
    if (!j.is_number()) suite_fail(field, "expected a number");
    const double v = j.get<double>();
    if (!std::isfinite(v)) suite_fail(field, "expected a finite number");
    return v;
}

bool suite_bool(const json& j, const std::string& field) {
    if (!j.is_boolean()) suite_fail(field, "expected true or false");
    return j.get<bool>();
}

std::vector<std::string> suite_strings(const json& j, const std::string& field, size_t min_count) {
    if (!j.is_array() || j.size() < min_count)
        suite_fail(field, "expected a list of " + std::to_string(min_count) + " or more strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(suite_string(j[i], field + "[" + std::to_string(i) + "]"));
    return out;
}

void suite_known_keys(const json& j, const std::string& prefix, std::initializer_list<const char*> keys) {
    for (const auto& [key, _] : j.items()) {
        bool known = false;
        for (const char* k : keys) known = known || key == k;
        if (!known) {
            std::string list;
            for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
            suite_fail(prefix + key, "unknown key (expected one of " + list + ")");
        }
    }
}

std::shared_ptr<const JsonSchema> suite_schema(const json& schema, const std::string& field) {
    try {
        return std::make_shared<const JsonSchema>(schema);
    } catch (const std::invalid_argument& e) {
        suite_fail(field, std::string("not a usable JSON Schema: ") + e.what());
    }
}

ordered_json suite_messages(const json& strict, const ordered_json& ordered) {
    if (!strict.is_array() || strict.empty()) suite_fail("messages", "expected a non-empty list of chat messages");
    static const std::set<std::string> roles = {"system", "user", "assistant", "tool"};
    for (size_t i = 0; i < strict.size(); ++i) {
        const std::string f = "messages[" + std::to_string(i) + "]";
        const json& m = strict[i];
        if (!m.is_object()) suite_fail(f, "expected an object {\"role\": ..., \"content\": ...}");
        suite_known_keys(m, f + ".", {"role", "content", "name", "tool_calls", "tool_call_id"});
        if (!m.contains("role")) suite_fail(f + ".role", "missing");
        const std::string& role = suite_string(m["role"], f + ".role");
        if (!roles.count(role)) suite_fail(f + ".role", "expected system, user, assistant or tool, not " + suite_quoted(role));
        const bool calls = m.contains("tool_calls");
        if (calls && (role != "assistant" || !m["tool_calls"].is_array()))
            suite_fail(f + ".tool_calls", "expected a list, on an assistant message");
        if (!m.contains("content")) {
            if (!calls) suite_fail(f + ".content", "missing");
        } else if (!(m["content"].is_null() && calls)) {
            suite_string(m["content"], f + ".content", /*allow_empty=*/true);
        }
        if (m.contains("name")) suite_string(m["name"], f + ".name");
        if (m.contains("tool_call_id")) suite_string(m["tool_call_id"], f + ".tool_call_id");
    }
    const std::string& last = strict.back()["role"].get_ref<const std::string&>();
    if (last != "user" && last != "tool")
        suite_fail("messages[" + std::to_string(strict.size() - 1) + "].role", "the last message must be the user's (or a tool's)");
    return ordered;
}

std::vector<ToolSpec> suite_tools(const json& j) {
    if (!j.is_array() || j.empty()) suite_fail("tools", "expected a non-empty list of function specs");
    std::vector<ToolSpec> out;
    std::set<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) {
        const std::string f = "tools[" + std::to_string(i) + "]";
        const json& t = j[i];
        if (!t.is_object()) suite_fail(f, "expected {\"type\": \"function\", \"function\": {...}}");
        suite_known_keys(t, f + ".", {"type", "function"});
        if (!t.contains("type") || t["type"] != "function") suite_fail(f + ".type", "expected \"function\"");
        if (!t.contains("function") || !t["function"].is_object()) suite_fail(f + ".function", "expected an object");
        const json& fn = t["function"];
        suite_known_keys(fn, f + ".function.", {"name", "description", "parameters"});
        if (!fn.contains("name")) suite_fail(f + ".function.name", "missing");
        const std::string& name = suite_string(fn["name"], f + ".function.name");
        if (!suite_name_chars(name, /*allow_dots=*/true)) suite_fail(f + ".function.name", "expected letters, digits, _ - . or :");
        if (!names.insert(name).second) suite_fail(f + ".function.name", "a second tool named " + suite_quoted(name));
        if (fn.contains("description")) suite_string(fn["description"], f + ".function.description", true);
        ToolSpec spec;
        spec.name = name;
        if (fn.contains("parameters")) {
            if (!fn["parameters"].is_object()) suite_fail(f + ".function.parameters", "expected a JSON Schema object");
            spec.parameters = suite_schema(fn["parameters"], f + ".function.parameters");
        } else {
            spec.parameters = suite_schema(json::object(), f + ".function.parameters");
        }
        out.push_back(std::move(spec));
    }
    return out;
}

EvalCheck suite_check(const json& c, const EvalItem& item) {
    if (!c.is_object()) suite_fail("check", "expected an object with a \"type\"");
    if (!c.contains("type")) suite_fail("check.type", "missing");
    const std::string type = suite_string(c["type"], "check.type");
    if (type == "exact") {
        suite_known_keys(c, "check.", {"type", "answer", "normalize"});
        if (!c.contains("answer")) suite_fail("check.answer", "missing");
        ExactCheck e;
        e.answer = suite_string(c["answer"], "check.answer", true);
        if (c.contains("normalize")) {
            e.strip = false;
            const json& n = c["normalize"];
            if (!n.is_array()) suite_fail("check.normalize", "expected a list of strip, strip_punctuation, lowercase");
            for (size_t i = 0; i < n.size(); ++i) {
                const std::string f = "check.normalize[" + std::to_string(i) + "]";
                const std::string& s = suite_string(n[i], f);
                if (s == "strip") e.strip = true;
                else if (s == "strip_punctuation") e.strip_punctuation = true;
                else if (s == "lowercase") e.lowercase = true;
                else suite_fail(f, "expected strip, strip_punctuation or lowercase, not " + suite_quoted(s));
            }
        }
        return e;
    }
    if (type == "numeric") {
        suite_known_keys(c, "check.", {"type", "value", "tolerance", "position"});
        if (!c.contains("value")) suite_fail("check.value", "missing");
        NumericCheck n;
        n.value = suite_finite(c["value"], "check.value");
        if (c.contains("tolerance")) {
            n.tolerance = suite_finite(c["tolerance"], "check.tolerance");
            if (n.tolerance < 0) suite_fail("check.tolerance", "expected a number >= 0");
        }
        if (c.contains("position")) {
            const std::string& p = suite_string(c["position"], "check.position");
            if (p != "first" && p != "last") suite_fail("check.position", "expected \"first\" or \"last\"");
            n.last = p == "last";
        }
        return n;
    }
    if (type == "regex") {
        suite_known_keys(c, "check.", {"type", "pattern"});
        if (!c.contains("pattern")) suite_fail("check.pattern", "missing");
        RegexCheck r;
        r.pattern = suite_string(c["pattern"], "check.pattern");
        try {
            r.regex = std::make_shared<const text::TextRegex>(r.pattern);
        } catch (const std::invalid_argument& e) {
            suite_fail("check.pattern", e.what());
        }
        return r;
    }
    if (type == "choice") {
        suite_known_keys(c, "check.", {"type", "options", "answer"});
        if (!c.contains("options")) suite_fail("check.options", "missing");
        if (!c.contains("answer")) suite_fail("check.answer", "missing");
        ChoiceCheck ch;
        ch.options = suite_strings(c["options"], "check.options", 2);
        std::set<std::string> lowered;
        for (size_t i = 0; i < ch.options.size(); ++i)
            if (!lowered.insert(lowercase(trim_white_space(ch.options[i]))).second)
                suite_fail("check.options[" + std::to_string(i) + "]", "repeats an option");
        ch.answer = suite_string(c["answer"], "check.answer");
        bool found = false;
        for (const auto& o : ch.options) found = found || o == ch.answer;
        if (!found) suite_fail("check.answer", "expected one of the options");
        return ch;
    }
    if (type == "contains" || type == "not_contains") {
        suite_known_keys(c, "check.", {"type", "strings", "mode", "ignore_case"});
        if (!c.contains("strings")) suite_fail("check.strings", "missing");
        ContainsCheck k;
        k.negate = type == "not_contains";
        k.strings = suite_strings(c["strings"], "check.strings", 1);
        if (c.contains("mode")) {
            const std::string& m = suite_string(c["mode"], "check.mode");
            if (m != "all" && m != "any") suite_fail("check.mode", "expected \"all\" or \"any\"");
            k.all = m == "all";
        }
        if (c.contains("ignore_case")) k.ignore_case = suite_bool(c["ignore_case"], "check.ignore_case");
        return k;
    }
    if (type == "json_schema") {
        suite_known_keys(c, "check.", {"type", "schema", "extract", "expected"});
        if (!c.contains("schema")) suite_fail("check.schema", "missing");
        JsonSchemaCheck s;
        s.schema = c["schema"];
        if (!s.schema.is_object() && !s.schema.is_boolean()) suite_fail("check.schema", "expected a JSON Schema (object or boolean)");
        s.validator = suite_schema(s.schema, "check.schema");
        if (c.contains("extract")) {
            const auto e = parse_json_extraction(suite_string(c["extract"], "check.extract"));
            if (!e) suite_fail("check.extract", "expected whole, fenced, braces or first");
            s.extract = *e;
        }
        if (c.contains("expected")) {
            if (!c["expected"].is_object()) suite_fail("check.expected", "expected an object");
            s.expected = c["expected"];
            if (!s.validator->valid(*s.expected)) suite_fail("check.expected", "not valid against check.schema");
        }
        return s;
    }
    if (type == "tool_call") {
        suite_known_keys(c, "check.", {"type", "name", "arguments"});
        if (item.tool_specs.empty()) suite_fail("tools", "a tool_call check needs the tools offered");
        if (!c.contains("name")) suite_fail("check.name", "missing");
        ToolCallCheck t;
        t.name = suite_string(c["name"], "check.name");
        const ToolSpec* spec = item.tool(t.name);
        if (!spec) suite_fail("check.name", suite_quoted(t.name) + " is not one of the tools");
        t.arguments = c.contains("arguments") ? c["arguments"] : json::object();
        if (!t.arguments.is_object()) suite_fail("check.arguments", "expected an object");
        if (!spec->parameters->valid(t.arguments)) suite_fail("check.arguments", "not valid against the tool's parameters");
        return t;
    }
    if (type == "instructions") {
        suite_known_keys(c, "check.", {"type", "constraints"});
        if (!c.contains("constraints")) suite_fail("check.constraints", "missing");
        const json& list = c["constraints"];
        if (!list.is_array() || list.empty()) suite_fail("check.constraints", "expected a non-empty list");
        InstructionsCheck ic;
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string f = "check.constraints[" + std::to_string(i) + "]";
            try {
                ic.constraints.push_back(parse_instruction_constraint(list[i]));
            } catch (const std::invalid_argument& e) {
                const std::string what = e.what();
                const size_t colon = what.find(": ");
                // "max: expected ..." -> field check.constraints[i].max
                if (colon != std::string::npos && what.find(' ') > colon) suite_fail(f + "." + what.substr(0, colon), what.substr(colon + 2));
                suite_fail(f, what);
            }
        }
        return ic;
    }
    suite_fail("check.type",
               "unknown check " + suite_quoted(type) +
                   " (expected exact, numeric, regex, choice, contains, not_contains, json_schema, tool_call or instructions)");
}

EvalItem suite_item(const json& j, const ordered_json& ordered) {
    if (!j.is_object()) suite_fail("", "expected one JSON object per line");
    suite_known_keys(j, "", {"id", "category", "prompt", "messages", "tools", "variant_of", "variant", "max_tokens", "check"});
    EvalItem item;
    if (!j.contains("id")) suite_fail("id", "missing");
    item.id = suite_string(j["id"], "id");
    if (!suite_name_chars(item.id, /*allow_dots=*/true)) suite_fail("id", "expected 1 to 128 letters, digits, _ - . or :");
    if (!j.contains("category")) suite_fail("category", "missing");
    item.category = suite_string(j["category"], "category");
    if (!suite_name_chars(item.category, /*allow_dots=*/false)) suite_fail("category", "expected 1 to 128 letters, digits, _ or -");
    const bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
    if (has_prompt == has_messages) suite_fail(has_prompt ? "messages" : "prompt", "give either prompt or messages (exactly one)");
    if (has_prompt) item.prompt = suite_string(j["prompt"], "prompt");
    else item.messages = suite_messages(j["messages"], ordered["messages"]);
    if (j.contains("tools")) {
        item.tool_specs = suite_tools(j["tools"]);
        item.tools = ordered["tools"];
    }
    if (j.contains("variant_of") != j.contains("variant"))
        suite_fail(j.contains("variant") ? "variant_of" : "variant", "variant and variant_of go together");
    if (j.contains("variant_of")) {
        item.variant_of = suite_string(j["variant_of"], "variant_of");
        item.variant = suite_string(j["variant"], "variant");
        if (item.variant_of == item.id) suite_fail("variant_of", "an item cannot be a variant of itself");
    }
    if (j.contains("max_tokens")) {
        const json& m = j["max_tokens"];
        if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > kSuiteMaxTokens)
            suite_fail("max_tokens", "expected an integer from 1 to " + std::to_string(kSuiteMaxTokens));
        item.max_tokens = m.get<int64_t>();
    }
    if (!j.contains("check")) suite_fail("check", "missing");
    item.check = suite_check(j["check"], item);
    item.check_json = ordered["check"];
    return item;
}

bool suite_blank(std::string_view line) {
    for (char c : line)
        if (c != ' ' && c != '\t' && c != '\r') return false;
    return true;
}

}  // namespace

std::string check_type(const EvalCheck& check) {
    struct Name {
        std::string operator()(const ExactCheck&) const { return "exact"; }
        std::string operator()(const NumericCheck&) const { return "numeric"; }
        std::string operator()(const RegexCheck&) const { return "regex"; }
        std::string operator()(const ChoiceCheck&) const { return "choice"; }
        std::string operator()(const ContainsCheck& c) const { return c.negate ? "not_contains" : "contains"; }
        std::string operator()(const JsonSchemaCheck&) const { return "json_schema"; }
        std::string operator()(const ToolCallCheck&) const { return "tool_call"; }
        std::string operator()(const InstructionsCheck&) const { return "instructions"; }
    };
    return std::visit(Name{}, check);
}

nlohmann::ordered_json EvalItem::conversation() const {
    if (!prompt) return messages;
    return ordered_json::array({ordered_json{{"role", "user"}, {"content", *prompt}}});
}

const ToolSpec* EvalItem::tool(const std::string& name) const {
    for (const auto& t : tool_specs)
        if (t.name == name) return &t;
    return nullptr;
}

std::vector<std::string> EvalSuite::categories() const {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& item : items)
        if (seen.insert(item.category).second) out.push_back(item.category);
    return out;
}

const EvalItem* EvalSuite::find(const std::string& id) const {
    for (const auto& item : items)
        if (item.id == id) return &item;
    return nullptr;
}

EvalSuite parse_eval_suite(const std::string& bytes, const std::string& source) {
    EvalSuite suite;
    suite.source = source;
    suite.sha256 = sha256_hex(bytes.data(), bytes.size());
    std::unordered_map<std::string, int64_t> line_of_id;
    size_t begin = 0;
    int64_t line = 0;
    while (begin < bytes.size()) {
        size_t end = bytes.find('\n', begin);
        if (end == std::string::npos) end = bytes.size();
        ++line;
        std::string_view text(bytes.data() + begin, end - begin);
        begin = end + 1;
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        if (suite_blank(text)) continue;
        const std::string where = source + ":" + std::to_string(line) + ": ";
        if (const auto bad = first_invalid_utf8(text.data(), text.size()))
            throw UserError(where + "not UTF-8 (byte " + std::to_string(*bad + 1) + " of the line)");
        json strict;
        try {
            strict = parse_strict_json(text.data(), text.data() + text.size());
        } catch (const StrictJsonError& e) {
            throw UserError(where + "not a JSON object: " + e.what());
        }
        try {
            const ordered_json ordered = ordered_json::parse(text.begin(), text.end());
            EvalItem item = suite_item(strict, ordered);
            item.line = line;
            if (const auto [it, fresh] = line_of_id.emplace(item.id, line); !fresh)
                suite_fail("id", suite_quoted(item.id) + " was already used on line " + std::to_string(it->second));
            suite.items.push_back(std::move(item));
        } catch (const SuiteFieldError& e) {
            throw UserError(where + (e.field.empty() ? "" : e.field + ": ") + e.message);
        }
    }
    if (suite.items.empty()) throw UserError(source + ": no items (an eval suite has one JSON object per line)");
    for (const auto& item : suite.items) {
        if (item.variant_of.empty()) continue;
        if (!line_of_id.count(item.variant_of))
            throw UserError(source + ":" + std::to_string(item.line) + ": variant_of: no item has the id " + suite_quoted(item.variant_of));
    }
    return suite;
}

EvalSuite load_eval_suite(const std::string& path) { return parse_eval_suite(read_whole_file(path, "eval suite"), path); }

bool values_equal(const nlohmann::json& expected, const nlohmann::json& actual) {
    if (expected.is_number() && actual.is_number()) return expected.get<double>() == actual.get<double>();
    if (expected.is_string() && actual.is_string())
        return lowercase(trim_white_space(expected.get_ref<const std::string&>())) ==
               lowercase(trim_white_space(actual.get_ref<const std::string&>()));
    if (expected.is_array() && actual.is_array()) {
        if (expected.size() != actual.size()) return false;
        for (size_t i = 0; i < expected.size(); ++i)
            if (!values_equal(expected[i], actual[i])) return false;
        return true;
    }
    if (expected.is_object() && actual.is_object()) {
        if (expected.size() != actual.size()) return false;
        for (const auto& [key, value] : expected.items())
            if (!actual.contains(key) || !values_equal(value, actual[key])) return false;
        return true;
    }
    return expected == actual;
}

}  // namespace ql::evaluation
