// SPDX-License-Identifier: GPL-3.0-or-later
// Results as data (docs/EVAL_SUITES.md "Results"): one model's outcome on every item of a suite,
// with the check's details, as JSON (written and read back) and CSV. The runner fills one
// ItemOutcome per item with check() (eval_checker.h), adds tokens and seconds, and keeps them in
// a ModelEvalReport; eval_comparison.h compares reports. Plain C++ (nlohmann_json).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ql::evaluation {

// One measured part of a check: a constraint of an instructions check, the name of a tool call,
// the number an arithmetic answer was read as ... `value` says what was measured, for people.
struct CheckDetail {
    std::string name;    // e.g. "number", "schema", "tool_name", "word_count"
    bool passed = false;
    std::string value;   // e.g. "12", "valid", "get_weather", "37 words"
};

struct ItemOutcome {
    std::string id;
    std::string category;
    std::string check;                       // the check type (eval_suite.h check_type())
    std::string variant_of;                  // the item's variant_of and variant ("" for an original)
    std::string variant;
    std::string output;                      // the generated text (invalid UTF-8 replaced by U+FFFD)
    bool passed = false;
    std::vector<CheckDetail> details;
    std::optional<bool> json_valid;          // json_schema checks: JSON found and valid against the schema
    std::optional<bool> tool_name_correct;   // tool_call checks: the first call names the expected function
    std::optional<bool> tool_arguments_correct;  // tool_call checks: its arguments valid and as expected
    int64_t tokens_generated = 0;            // set by the runner
    double seconds = 0;                      // set by the runner: generation wall time of this item
};

struct ModelEvalReport {
    std::string model;          // the label tables show ("fp", "nvfp4 w4a16" ...)
    std::string suite;          // the suite file as given
    std::string suite_sha256;   // EvalSuite::sha256
    nlohmann::ordered_json settings = nlohmann::ordered_json::object();  // free-form: decoding, seed, format ...
    std::vector<ItemOutcome> items;  // in suite order
};

// {"model", "suite", "suite_sha256", "settings", "items": [{"id", "category", "check",
//  "variant_of"?, "variant"?, "passed", "output", "details": [{"name", "passed", "value"}],
//  "json_valid"?, "tool_name_correct"?, "tool_arguments_correct"?, "tokens_generated",
//  "seconds"}]}; absent optionals (and empty variant fields) are omitted.
nlohmann::ordered_json report_json(const ModelEvalReport& report);
// The inverse; UserError "<source>: <field>: ..." naming the bad field (e.g. "items[3].passed").
ModelEvalReport report_from_json(const nlohmann::json& j, const std::string& source);
// report_from_json of a file (UserError naming the file when it is not JSON).
ModelEvalReport load_report(const std::string& path);

// CSV (RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled; lines end
// with \n), one row per item:
//   id,category,check,variant_of,variant,passed,json_valid,tool_name_correct,tool_arguments_correct,tokens_generated,seconds,details,output
// booleans 1/0 (empty where not applicable), details "name=value:1|name=value:0" in order.
std::string report_items_csv(const ModelEvalReport& report);

// One CSV field, quoted when needed (shared by the CSV writers of this room).
std::string csv_field(const std::string& s);

}  // namespace ql::evaluation
