// SPDX-License-Identifier: GPL-3.0-or-later
// One model's eval outcomes as JSON and CSV (docs/EVAL_SUITES.md "Results").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/evaluation/eval_results.h"
#include "tests/engine/user_error_text.h"

namespace ql::evaluation {
namespace {

ModelEvalReport sample_report() {
    ModelEvalReport r;
    r.model = "nvfp4";
    r.suite = "resources/evalsuites/default.jsonl";
    r.suite_sha256 = std::string(64, 'c');
    r.settings = nlohmann::ordered_json{{"decoding", "greedy"}, {"seed", 1}};
    ItemOutcome a;
    a.id = "json-1";
    a.category = "json";
    a.check = "json_schema";
    a.output = "{\"name\": \"Alice\",\n \"age\": 30}";
    a.passed = true;
    a.details = {{"json", true, "found by whole"}, {"schema", true, "valid"}};
    a.json_valid = true;
    a.tokens_generated = 14;
    a.seconds = 0.25;
    ItemOutcome b;
    b.id = "tool-1-typo";
    b.category = "adversarial";
    b.check = "tool_call";
    b.variant_of = "tool-1";
    b.variant = "typo";
    b.output = "no, \"thanks\"";
    b.details = {{"calls", false, "0"}};
    b.tool_name_correct = false;
    b.tool_arguments_correct = false;
    b.tokens_generated = 3;
    b.seconds = 1e-3;
    r.items = {a, b};
    return r;
}

TEST(EvalResults, JsonRoundTripsEveryField) {
    const ModelEvalReport r = sample_report();
    const nlohmann::ordered_json j = report_json(r);
    EXPECT_FALSE(j["items"][0].contains("tool_name_correct"));
    EXPECT_FALSE(j["items"][0].contains("variant_of"));
    EXPECT_EQ(j["items"][1]["variant_of"], "tool-1");
    const ModelEvalReport back = report_from_json(nlohmann::json::parse(j.dump()), "r.json");
    EXPECT_EQ(report_json(back).dump(), j.dump());
    EXPECT_EQ(back.items[0].json_valid, true);
    EXPECT_FALSE(back.items[0].tool_name_correct.has_value());
    EXPECT_EQ(back.items[1].tool_arguments_correct, false);
    EXPECT_EQ(back.items[1].details[0].value, "0");
    EXPECT_EQ(back.settings["decoding"], "greedy");
}

TEST(EvalResults, BadReportsNameTheField) {
    auto error = [](const std::string& text) {
        return test::user_error_text([&] { report_from_json(nlohmann::json::parse(text), "r.json"); });
    };
    nlohmann::json good = nlohmann::json::parse(report_json(sample_report()).dump());
    EXPECT_EQ(error("[]"), "r.json: (top level): expected an object");
    auto without = [&](const std::string& key) {
        nlohmann::json j = good;
        j.erase(key);
        return j.dump();
    };
    EXPECT_EQ(error(without("model")), "r.json: model: missing");
    nlohmann::json j = good;
    j["items"][1]["passed"] = "yes";
    EXPECT_EQ(error(j.dump()), "r.json: items[1].passed: expected true or false");
    j = good;
    j["items"][0]["seconds"] = -1;
    EXPECT_EQ(error(j.dump()), "r.json: items[0].seconds: expected a finite number >= 0");
    j = good;
    j["items"][0]["tokens_generated"] = 1.5;
    EXPECT_EQ(error(j.dump()), "r.json: items[0].tokens_generated: expected an integer >= 0");
    j = good;
    j["items"][0]["details"][1]["score"] = 1;
    EXPECT_EQ(error(j.dump()), "r.json: items[0].details[1].score: unknown key");
    j = good;
    j["extra"] = 1;
    EXPECT_EQ(error(j.dump()), "r.json: extra: unknown key");
}

TEST(EvalResults, LoadReportNamesTheFile) {
    const auto dir = std::filesystem::temp_directory_path() / "ql_eval_results_test";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "r.json").string();
    std::ofstream(path) << "{\"model\": \"x\", \"model\": \"y\"}";
    EXPECT_EQ(test::user_error_text([&] { load_report(path); }), path + ": not an eval report (JSON): duplicate key \"model\"");
    std::ofstream(path) << report_json(sample_report()).dump(2);
    EXPECT_EQ(load_report(path).items.size(), 2u);
    std::filesystem::remove_all(dir);
}

TEST(EvalResults, ItemsCsvQuotesWhatNeedsIt) {
    const std::string csv = report_items_csv(sample_report());
    EXPECT_EQ(csv,
              "id,category,check,variant_of,variant,passed,json_valid,tool_name_correct,tool_arguments_correct,tokens_generated,seconds,"
              "details,output\n"
              "json-1,json,json_schema,,,1,1,,,14,0.250000,json=found by whole:1|schema=valid:1,\"{\"\"name\"\": \"\"Alice\"\",\n \"\"age\"\": 30}\"\n"
              "tool-1-typo,adversarial,tool_call,tool-1,typo,0,,0,0,3,0.001000,calls=0:0,\"no, \"\"thanks\"\"\"\n");
    EXPECT_EQ(csv_field("plain"), "plain");
    EXPECT_EQ(csv_field("a\rb"), "\"a\rb\"");
}

}  // namespace
}  // namespace ql::evaluation
