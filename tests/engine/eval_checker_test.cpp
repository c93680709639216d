// SPDX-License-Identifier: GPL-3.0-or-later
// Every check type with outputs that pass and outputs that fail (docs/EVAL_SUITES.md "Checks").
#include <gtest/gtest.h>

#include "engine/evaluation/eval_checker.h"

namespace ql::evaluation {
namespace {

EvalItem item_with(const std::string& fields) {
    return parse_eval_suite("{\"id\": \"t\", \"category\": \"c\", \"prompt\": \"p\", " + fields + "}\n", "t.jsonl").items.at(0);
}
EvalItem item_checking(const std::string& check) { return item_with("\"check\": " + check); }

TEST(EvalChecker, ExactWithAndWithoutNormalisation) {
    const EvalItem loose = item_checking(R"({"type": "exact", "answer": "Paris", "normalize": ["strip", "strip_punctuation", "lowercase"]})");
    EXPECT_TRUE(check(loose, " paris.\n").passed);
    EXPECT_TRUE(check(loose, "\"PARIS!\"").passed);
    EXPECT_FALSE(check(loose, "Paris is the capital.").passed);
    const EvalItem strict = item_checking(R"({"type": "exact", "answer": "Paris"})");
    EXPECT_TRUE(check(strict, "Paris\n").passed);
    EXPECT_FALSE(check(strict, "Paris.").passed);
    EXPECT_FALSE(check(strict, "paris").passed);
    const ItemOutcome o = check(strict, "  London ");
    EXPECT_EQ(o.check, "exact");
    ASSERT_EQ(o.details.size(), 1u);
    EXPECT_EQ(o.details[0].value, "London");
}

TEST(EvalChecker, NumericReadsTheLastOrFirstNumber) {
    const EvalItem last = item_checking(R"({"type": "numeric", "value": 12})");
    EXPECT_TRUE(check(last, "7 + 5 = 12").passed);
    EXPECT_FALSE(check(last, "12 is not it, 13 is").passed);
    const EvalItem first = item_checking(R"({"type": "numeric", "value": 12, "position": "first"})");
    EXPECT_TRUE(check(first, "12 is not it, 13 is").passed);
    const EvalItem thousands = item_checking(R"({"type": "numeric", "value": -1234.5})");
    EXPECT_TRUE(check(thousands, "It costs -1,234.5 dollars").passed);
    const EvalItem tolerant = item_checking(R"({"type": "numeric", "value": 3.14, "tolerance": 0.01})");
    EXPECT_TRUE(check(tolerant, "about 3.15").passed);
    EXPECT_FALSE(check(tolerant, "about 3.2").passed);
    const ItemOutcome none = check(last, "twelve");
    EXPECT_FALSE(none.passed);
    EXPECT_EQ(none.details[0].value, "no number");
    EXPECT_EQ(check(last, "x = 12.0").details[0].value, "12");
    EXPECT_EQ(numbers_in("1,000 and 2,50 and 3.5.6"), (std::vector<double>{1000, 2, 50, 3.5, 6}));
}

TEST(EvalChecker, RegexMatchesAnywhere) {
    const EvalItem blue = item_checking(R"({"type": "regex", "pattern": "\\bblue\\b"})");
    const ItemOutcome o = check(blue, "The sky is blue.");
    EXPECT_TRUE(o.passed);
    EXPECT_EQ(o.details[0].value, "\"blue\"");
    EXPECT_FALSE(check(blue, "bluer skies").passed);
    const EvalItem anchored = item_checking(R"({"type": "regex", "pattern": "(?i)^\\s*yes\\b"})");
    EXPECT_TRUE(check(anchored, "  Yes, it is.").passed);
    EXPECT_FALSE(check(anchored, "I think yes").passed);
}

TEST(EvalChecker, ChoiceNeedsExactlyOneNamedOption) {
    const EvalItem letters = item_checking(R"({"type": "choice", "options": ["A", "B", "C", "D"], "answer": "B"})");
    EXPECT_TRUE(check(letters, "B").passed);
    EXPECT_TRUE(check(letters, "The answer is (B).").passed);
    EXPECT_FALSE(check(letters, "A or B").passed);
    EXPECT_FALSE(check(letters, "C").passed);
    EXPECT_FALSE(check(letters, "b").passed);  // single letters are matched as written ("a" the article)
    const ItemOutcome none = check(letters, "a cat");
    EXPECT_FALSE(none.passed);
    EXPECT_EQ(none.details[0].value, "none");
    const EvalItem cities = item_checking(R"({"type": "choice", "options": ["Paris", "London", "Berlin"], "answer": "Paris"})");
    EXPECT_TRUE(check(cities, "paris").passed);
    const ItemOutcome two = check(cities, "Paris, not London");
    EXPECT_FALSE(two.passed);
    EXPECT_EQ(two.details[0].value, "Paris, London");
    EXPECT_FALSE(check(cities, "Parisian food").passed);
}

TEST(EvalChecker, ContainsAndNotContainsWithModes) {
    EXPECT_TRUE(check(item_checking(R"({"type": "contains", "strings": ["red", "blue"]})"), "red and blue").passed);
    EXPECT_FALSE(check(item_checking(R"({"type": "contains", "strings": ["red", "blue"]})"), "red only").passed);
    EXPECT_TRUE(check(item_checking(R"({"type": "contains", "strings": ["red", "blue"], "mode": "any"})"), "red only").passed);
    EXPECT_FALSE(check(item_checking(R"({"type": "contains", "strings": ["Red"]})"), "red").passed);
    EXPECT_TRUE(check(item_checking(R"({"type": "contains", "strings": ["Red"], "ignore_case": true})"), "RED").passed);
    const EvalItem none_of = item_checking(R"({"type": "not_contains", "strings": ["sorry", "cannot"]})");
    EXPECT_TRUE(check(none_of, "Here you go.").passed);
    const ItemOutcome o = check(none_of, "Sorry, I cannot.");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.details[0].value, "1 of 2; found \"cannot\"");
    const EvalItem not_all = item_checking(R"({"type": "not_contains", "strings": ["a", "b"], "mode": "any"})");
    EXPECT_TRUE(check(not_all, "a").passed);
    EXPECT_FALSE(check(not_all, "ab").passed);
}

TEST(EvalChecker, JsonSchemaSeparatesValidityFromExpectedValues) {
    const EvalItem person = item_checking(
        R"({"type": "json_schema", "schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}, "expected": {"name": "Alice", "age": 30}})");
    ItemOutcome o = check(person, "```json\n{\"name\": \"Alice\", \"age\": 30}\n```");
    EXPECT_TRUE(o.passed);
    EXPECT_EQ(o.json_valid, true);
    o = check(person, "{\"name\": \"Bob\", \"age\": 30}");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.json_valid, true);
    EXPECT_EQ(o.details.back().value, "differs in name");
    o = check(person, "{\"name\": \"Alice\", \"age\": \"30\"}");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.json_valid, false);
    EXPECT_EQ(o.details[1].value.substr(0, 13), "<root> [age]:");
    o = check(person, "Alice is 30.");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.json_valid, false);
    EXPECT_EQ(o.details[0].value, "no JSON (first)");
    // Invalid UTF-8 in the output is replaced, not fatal.
    o = check(person, "{\"name\": \"Al\xffice\", \"age\": 30}");
    EXPECT_EQ(o.json_valid, true);
    EXPECT_EQ(o.output, "{\"name\": \"Al\xEF\xBF\xBDice\", \"age\": 30}");
}

TEST(EvalChecker, ToolCallReportsNameAndArgumentsSeparately) {
    const EvalItem weather = item_with(
        R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}, {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}], "check": {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}})");
    ItemOutcome o = check(weather, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"paris\", \"days\": 2}}\n</tool_call>");
    EXPECT_TRUE(o.passed);
    EXPECT_EQ(o.tool_name_correct, true);
    EXPECT_EQ(o.tool_arguments_correct, true);
    o = check(weather, "{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.tool_name_correct, false);
    EXPECT_EQ(o.tool_arguments_correct, true);
    o = check(weather, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}");
    EXPECT_EQ(o.tool_name_correct, true);
    EXPECT_EQ(o.tool_arguments_correct, false);
    EXPECT_EQ(o.details.back().value, "differ in city");
    o = check(weather, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 0}}");  // minimum 1
    EXPECT_EQ(o.tool_arguments_correct, false);
    EXPECT_FALSE(o.details[2].passed);
    o = check(weather, "It is sunny in Paris.");
    EXPECT_FALSE(o.passed);
    EXPECT_EQ(o.tool_name_correct, false);
    EXPECT_EQ(o.tool_arguments_correct, false);
    EXPECT_EQ(o.details[0].value, "0");
}

TEST(EvalChecker, InstructionsPassWhenEveryConstraintHolds) {
    const EvalItem item = item_checking(
        R"({"type": "instructions", "constraints": [{"kind": "word_count", "max": 5}, {"kind": "lowercase"}, {"kind": "no_commas"}]})");
    ItemOutcome o = check(item, "cats purr and nap");
    EXPECT_TRUE(o.passed);
    ASSERT_EQ(o.details.size(), 3u);
    EXPECT_EQ(o.details[0].name, "word_count");
    EXPECT_EQ(o.details[0].value, "4 words");
    o = check(item, "cats purr, and nap");
    EXPECT_FALSE(o.passed);
    EXPECT_TRUE(o.details[0].passed);
    EXPECT_TRUE(o.details[1].passed);
    EXPECT_FALSE(o.details[2].passed);
}

TEST(EvalChecker, OutcomeCarriesTheItemsIdentity) {
    const EvalSuite s = parse_eval_suite(
        R"({"id": "a", "category": "facts", "prompt": "p", "check": {"type": "exact", "answer": "x"}})"
        "\n"
        R"({"id": "a-typo", "category": "adversarial", "variant_of": "a", "variant": "typo", "prompt": "p", "check": {"type": "exact", "answer": "x"}})",
        "s");
    const ItemOutcome o = check(s.items[1], "x");
    EXPECT_EQ(o.id, "a-typo");
    EXPECT_EQ(o.category, "adversarial");
    EXPECT_EQ(o.variant_of, "a");
    EXPECT_EQ(o.variant, "typo");
    EXPECT_EQ(o.tokens_generated, 0);
    EXPECT_FALSE(o.json_valid.has_value());
}

}  // namespace
}  // namespace ql::evaluation
