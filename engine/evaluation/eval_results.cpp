// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/eval_results.h"

#include <charconv>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql::evaluation {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

struct ResultsFieldError {
    std::string field, message;
};
[[noreturn]] void results_fail(const std::string& field, const std::string& message) { throw ResultsFieldError{field, message}; }

const json& results_member(const json& j, const std::string& prefix, const char* key) {
    if (!j.contains(key)) results_fail(prefix + key, "missing");
    return j[key];
}
std::string results_string(const json& j, const std::string& prefix, const char* key) {
    const json& v = results_member(j, prefix, key);
    if (!v.is_string()) results_fail(prefix + key, "expected a string");
    return v.get<std::string>();
}
bool results_bool(const json& j, const std::string& prefix, const char* key) {
    const json& v = results_member(j, prefix, key);
    if (!v.is_boolean()) results_fail(prefix + key, "expected true or false");
    return v.get<bool>();
}
std::optional<bool> results_optional_bool(const json& j, const std::string& prefix, const char* key) {
    if (!j.contains(key)) return std::nullopt;
    return results_bool(j, prefix, key);
}
void results_known_keys(const json& j, const std::string& prefix, std::initializer_list<const char*> keys) {
    for (const auto& [key, _] : j.items()) {
        bool known = false;
        for (const char* k : keys) known = known || key == k;
        if (!known) results_fail(prefix + key, "unknown key");
    }
}

std::string results_bool_cell(const std::optional<bool>& b) { return b ? (*b ? "1" : "0") : ""; }

}  // namespace

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

ordered_json report_json(const ModelEvalReport& report) {
    ordered_json j;
    j["model"] = report.model;
    j["suite"] = report.suite;
    j["suite_sha256"] = report.suite_sha256;
    j["settings"] = report.settings;
    ordered_json items = ordered_json::array();
    for (const auto& o : report.items) {
        ordered_json item;
        item["id"] = o.id;
        item["category"] = o.category;
        item["check"] = o.check;
        if (!o.variant_of.empty()) item["variant_of"] = o.variant_of;
        if (!o.variant.empty()) item["variant"] = o.variant;
        item["passed"] = o.passed;
        item["output"] = o.output;
        ordered_json details = ordered_json::array();
        for (const auto& d : o.details) details.push_back(ordered_json{{"name", d.name}, {"passed", d.passed}, {"value", d.value}});
        item["details"] = std::move(details);
        if (o.json_valid) item["json_valid"] = *o.json_valid;
        if (o.tool_name_correct) item["tool_name_correct"] = *o.tool_name_correct;
        if (o.tool_arguments_correct) item["tool_arguments_correct"] = *o.tool_arguments_correct;
        item["tokens_generated"] = o.tokens_generated;
        item["seconds"] = o.seconds;
        items.push_back(std::move(item));
    }
    j["items"] = std::move(items);
    return j;
}

ModelEvalReport report_from_json(const json& j, const std::string& source) {
    try {
        if (!j.is_object()) results_fail("(top level)", "expected an object");
        results_known_keys(j, "", {"model", "suite", "suite_sha256", "settings", "items"});
        ModelEvalReport r;
        r.model = results_string(j, "", "model");
        r.suite = results_string(j, "", "suite");
        r.suite_sha256 = results_string(j, "", "suite_sha256");
        if (j.contains("settings")) {
            if (!j["settings"].is_object()) results_fail("settings", "expected an object");
            r.settings = ordered_json::parse(j["settings"].dump());
        }
        const json& items = results_member(j, "", "items");
        if (!items.is_array()) results_fail("items", "expected a list");
        for (size_t i = 0; i < items.size(); ++i) {
            const std::string p = "items[" + std::to_string(i) + "].";
            const json& it = items[i];
            if (!it.is_object()) results_fail(p.substr(0, p.size() - 1), "expected an object");
            results_known_keys(it, p, {"id", "category", "check", "variant_of", "variant", "passed", "output", "details", "json_valid", "tool_name_correct",
                                       "tool_arguments_correct", "tokens_generated", "seconds"});
            ItemOutcome o;
            o.id = results_string(it, p, "id");
            o.category = results_string(it, p, "category");
            o.check = results_string(it, p, "check");
            if (it.contains("variant_of")) o.variant_of = results_string(it, p, "variant_of");
            if (it.contains("variant")) o.variant = results_string(it, p, "variant");
            o.passed = results_bool(it, p, "passed");
            o.output = results_string(it, p, "output");
            const json& details = results_member(it, p, "details");
            if (!details.is_array()) results_fail(p + "details", "expected a list");
            for (size_t k = 0; k < details.size(); ++k) {
                const std::string dp = p + "details[" + std::to_string(k) + "].";
                if (!details[k].is_object()) results_fail(dp.substr(0, dp.size() - 1), "expected an object");
                results_known_keys(details[k], dp, {"name", "passed", "value"});
                o.details.push_back({results_string(details[k], dp, "name"), results_bool(details[k], dp, "passed"),
                                     results_string(details[k], dp, "value")});
            }
            o.json_valid = results_optional_bool(it, p, "json_valid");
            o.tool_name_correct = results_optional_bool(it, p, "tool_name_correct");
            o.tool_arguments_correct = results_optional_bool(it, p, "tool_arguments_correct");
            const json& tokens = results_member(it, p, "tokens_generated");
            if (!tokens.is_number_integer() || tokens.get<int64_t>() < 0) results_fail(p + "tokens_generated", "expected an integer >= 0");
            o.tokens_generated = tokens.get<int64_t>();
            const json& seconds = results_member(it, p, "seconds");
            if (!seconds.is_number() || !std::isfinite(seconds.get<double>()) || seconds.get<double>() < 0)
                results_fail(p + "seconds", "expected a finite number >= 0");
            o.seconds = seconds.get<double>();
            r.items.push_back(std::move(o));
        }
        return r;
    } catch (const ResultsFieldError& e) {
        throw UserError(source + ": " + e.field + ": " + e.message);
    }
}

ModelEvalReport load_report(const std::string& path) {
    const std::string bytes = read_whole_file(path, "eval report");
    json j;
    try {
        j = parse_strict_json(bytes.data(), bytes.data() + bytes.size());
    } catch (const StrictJsonError& e) {
        throw UserError(path + ": not an eval report (JSON): " + e.what());
    }
    return report_from_json(j, path);
}

std::string report_items_csv(const ModelEvalReport& report) {
    std::string out = "id,category,check,variant_of,variant,passed,json_valid,tool_name_correct,tool_arguments_correct,tokens_generated,seconds,details,output\n";
    for (const auto& o : report.items) {
        std::string details;
        for (const auto& d : o.details) details += (details.empty() ? "" : "|") + d.name + "=" + d.value + ":" + (d.passed ? "1" : "0");
        char buffer[64];  // to_chars: independent of the C locale, unlike printf
        const std::string seconds(buffer, std::to_chars(buffer, buffer + sizeof(buffer), o.seconds, std::chars_format::fixed, 6).ptr);
        out += csv_field(o.id) + "," + csv_field(o.category) + "," + o.check + "," + csv_field(o.variant_of) + "," +
               csv_field(o.variant) + "," + (o.passed ? "1" : "0") + "," +
               results_bool_cell(o.json_valid) + "," + results_bool_cell(o.tool_name_correct) + "," +
               results_bool_cell(o.tool_arguments_correct) + "," + std::to_string(o.tokens_generated) + "," + seconds + "," +
               csv_field(details) + "," + csv_field(o.output) + "\n";
    }
    return out;
}

}  // namespace ql::evaluation
