// SPDX-License-Identifier: GPL-3.0-or-later
// The lm-evaluation-harness export of an eval suite (docs/EVAL_SUITES.md "lm-eval export"): the
// files it writes, what it leaves out and why, and lm-eval itself (0.4.13 in the peers venv,
// tests/peers/lm_eval_export_peer.py) scoring outputs exactly as our checker does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/evaluation/eval_checker.h"
#include "engine/evaluation/lm_eval_export.h"
#include "tests/engine/user_error_text.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::evaluation {
namespace {

namespace fs = std::filesystem;

const char* kExportSuite =
    R"x({"id": "cap", "category": "facts", "prompt": "Capital of France?", "max_tokens": 16, "check": {"type": "exact", "answer": "Paris", "normalize": ["strip", "strip_punctuation", "lowercase"]}})x"
    "\n"
    R"x({"id": "cap-sys", "category": "facts", "messages": [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Capital of Italy?"}], "max_tokens": 16, "check": {"type": "exact", "answer": "Rome", "normalize": ["strip", "strip_punctuation", "lowercase"]}})x"
    "\n"
    R"x({"id": "word", "category": "facts", "prompt": "Say OK.", "check": {"type": "exact", "answer": "OK"}})x"
    "\n"
    R"x({"id": "raw", "category": "facts", "prompt": "Say ok.", "check": {"type": "exact", "answer": "ok", "normalize": []}})x"
    "\n"
    R"x({"id": "sum", "category": "arithmetic", "prompt": "What is 1200 + 34?", "max_tokens": 32, "check": {"type": "numeric", "value": 1234}})x"
    "\n"
    R"x({"id": "sum-first", "category": "arithmetic", "prompt": "What is 5 + 7?", "max_tokens": 32, "check": {"type": "numeric", "value": 12, "position": "first"}})x"
    "\n"
    R"x({"id": "pi", "category": "arithmetic", "prompt": "Pi to two places?", "check": {"type": "numeric", "value": 3.14, "tolerance": 0.005}})x"
    "\n"
    R"x({"id": "sky", "category": "facts", "prompt": "Colour of the sky?", "check": {"type": "regex", "pattern": "(?i)\\bblue\\b"}})x"
    "\n"
    R"x({"id": "yes", "category": "facts", "prompt": "Is water wet?", "check": {"type": "regex", "pattern": "^\\s*(?:Yes|yes)"}})x"
    "\n"
    R"x({"id": "abc", "category": "choices", "prompt": "A, B or C?", "check": {"type": "choice", "options": ["A", "B", "C"], "answer": "A"}})x"
    "\n"
    R"x({"id": "tool", "category": "tools", "prompt": "Weather?", "tools": [{"type": "function", "function": {"name": "w"}}], "check": {"type": "exact", "answer": "x"}})x"
    "\n"
    R"x({"id": "chat", "category": "facts", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Capital of Spain?"}], "check": {"type": "exact", "answer": "Madrid"}})x"
    "\n";

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / name;
    fs::remove_all(dir);
    return dir;
}

TEST(LmEvalExport, WritesTasksGroupedByCheckAndLeavesOutWhatLmEvalCannotReproduce) {
    const EvalSuite suite = parse_eval_suite(kExportSuite, "export.jsonl");
    const fs::path dir = fresh_dir("ql_lm_eval_export_test");
    const LmEvalExport e = export_lm_eval_tasks(suite, dir.string(), "ql_suite", 64);
    EXPECT_EQ(e.tasks, (std::vector<std::string>{"ql_suite_exact_strip_punct_lower_16", "ql_suite_exact_strip_64", "ql_suite_exact_64",
                                                 "ql_suite_numeric_last_32", "ql_suite_numeric_first_32", "ql_suite_regex1_64",
                                                 "ql_suite_regex2_64"}));
    EXPECT_EQ(e.exported_ids, (std::vector<std::string>{"cap", "cap-sys", "word", "raw", "sum", "sum-first", "sky", "yes"}));
    ASSERT_EQ(e.left_out.size(), 4u);
    EXPECT_EQ(e.left_out[0], (std::pair<std::string, std::string>{"pi", "numeric: only integer answers with tolerance 0 (lm-eval compares the number as text)"}));
    EXPECT_EQ(e.left_out[1].second, "check choice: no lm-eval filter and metric reproduce it");
    EXPECT_EQ(e.left_out[2].second, "tools: lm-eval passes no tools to the chat template");
    EXPECT_EQ(e.left_out[3].second, "conversation: lm-eval prompts one user message (after at most one system message)");

    EXPECT_EQ(read_text(dir / "ql_suite_exact_strip_punct_lower_16.jsonl"),
              "{\"id\":\"cap\",\"category\":\"facts\",\"system\":\"\",\"prompt\":\"Capital of France?\",\"target\":\"Paris\"}\n"
              "{\"id\":\"cap-sys\",\"category\":\"facts\",\"system\":\"Answer in one word.\",\"prompt\":\"Capital of Italy?\",\"target\":\"Rome\"}\n");
    const std::string numeric = read_text(dir / "ql_suite_numeric_last_32.yaml");
    EXPECT_NE(numeric.find("    test: " + nlohmann::json((fs::absolute(dir) / "ql_suite_numeric_last_32.jsonl").string()).dump() + "\n"),
              std::string::npos);
    EXPECT_NE(numeric.find("regex_pattern: \"-?[0-9]+(?:,[0-9]{3})*(?:\\\\.[0-9]+)?\"\n        group_select: -1\n"), std::string::npos)
        << numeric;
    EXPECT_NE(numeric.find("    regexes_to_ignore:\n      - \",\"\n      - \"\\\\.0+$\"\n"), std::string::npos);
    EXPECT_NE(numeric.find("  max_gen_toks: 32\n"), std::string::npos);
    EXPECT_NE(read_text(dir / "ql_suite_numeric_last_32.jsonl").find("\"target\":\"1234\""), std::string::npos);
    const std::string regex = read_text(dir / "ql_suite_regex1_64.yaml");
    EXPECT_NE(regex.find("regex_pattern: \"(?i)\\\\bblue\\\\b\"\n"), std::string::npos) << regex;
    EXPECT_NE(regex.find("mapping_dict: {\"[invalid]\": \"0\"}\n        default_value: \"1\"\n"), std::string::npos);
    const std::string group = read_text(dir / "ql_suite.yaml");
    EXPECT_NE(group.find("group: ql_suite\ntask:\n  - ql_suite_exact_strip_punct_lower_16\n"), std::string::npos) << group;
    EXPECT_NE(group.find("weight_by_size: true\n    filter_list: quantlab\n"), std::string::npos);
    EXPECT_EQ(read_text(dir / "ql_suite_left_out.tsv").substr(0, 20), "id\treason\npi\tnumeric");
    EXPECT_EQ(e.files.size(), 2 * e.tasks.size() + 2);
    fs::remove_all(dir);
}

TEST(LmEvalExport, RefusesBadGroupsAndSuitesWithNothingToExport) {
    const EvalSuite suite = parse_eval_suite(kExportSuite, "export.jsonl");
    EXPECT_EQ(test::user_error_text([&] { export_lm_eval_tasks(suite, "/tmp/x", "bad-name", 64); }),
              "lm-eval export: the group name 'bad-name' must be letters, digits and _");
    const EvalSuite choices = parse_eval_suite(
        R"({"id": "abc", "category": "c", "prompt": "p", "check": {"type": "choice", "options": ["A", "B"], "answer": "A"}})", "c.jsonl");
    EXPECT_EQ(test::user_error_text([&] { export_lm_eval_tasks(choices, "/tmp/x", "g", 64); }),
              "lm-eval export of c.jsonl: no item has a check lm-eval can reproduce");
}

// Outputs for every exported item, passing and failing ones, scored by lm-eval's own code.
TEST(LmEvalExportPeer, LmEvalScoresEveryExportedItemAsOurCheckerDoes) {
    const std::string python = test::peers_python();
    const EvalSuite suite = parse_eval_suite(kExportSuite, "export.jsonl");
    const fs::path dir = fresh_dir("ql_lm_eval_export_peer");
    export_lm_eval_tasks(suite, (dir / "tasks").string(), "ql_peer", 64);
    const std::vector<std::pair<std::string, std::string>> outputs = {
        {"cap", "Paris"}, {"cap", "  paris.\n"}, {"cap", "\"PARIS!\""}, {"cap", "Paris is the capital."}, {"cap", "London"},
        {"cap-sys", "Rome"}, {"cap-sys", "rome!"}, {"cap-sys", "Milan"},
        {"word", "OK"}, {"word", " OK \n"}, {"word", "ok"}, {"word", "OK."},
        {"raw", "ok"}, {"raw", " ok"}, {"raw", "ok\n"},
        {"sum", "1200 + 34 = 1234"}, {"sum", "The answer is 1,234."}, {"sum", "1234.0"}, {"sum", "1234 is not it: 1235"},
        {"sum", "no idea"}, {"sum", "-1234"}, {"sum", "1234.5"},
        {"sum-first", "12 (5 + 7)"}, {"sum-first", "5 + 7 = 12"}, {"sum-first", "twelve"},
        {"sky", "The sky is Blue."}, {"sky", "bluer"}, {"sky", "BLUE"}, {"sky", "red"},
        {"yes", "Yes, it is."}, {"yes", "  yes"}, {"yes", "I think yes"}, {"yes", ""},
    };
    nlohmann::json cases = nlohmann::json::array();
    int passed = 0;
    for (const auto& [id, output] : outputs) {
        const EvalItem& item = *suite.find(id);
        const ItemOutcome o = check(item, output);
        passed += o.passed ? 1 : 0;
        const auto conversation = item.conversation();
        cases.push_back({{"id", id},
                         {"output", output},
                         {"passed", o.passed},
                         {"system", conversation.size() == 2 ? conversation[0]["content"].get<std::string>() : ""},
                         {"user", conversation.back()["content"]}});
    }
    EXPECT_EQ(passed, 16);  // of 33: both verdicts are exercised (counted by hand per item)
    std::ofstream(dir / "cases.json") << cases.dump(1);
    test::expect_peer_passes(python, "lm_eval_export_peer.py",
                             "'" + (dir / "tasks").string() + "' ql_peer '" + (dir / "cases.json").string() + "'", dir.string());
}

}  // namespace
}  // namespace ql::evaluation
