// SPDX-License-Identifier: GPL-3.0-or-later
// Where the json_schema check finds the JSON in a model's output (docs/EVAL_SUITES.md).
#include <gtest/gtest.h>

#include "engine/evaluation/json_extraction.h"

namespace ql::evaluation {
namespace {

TEST(JsonExtraction, WholeOutputParsesAfterTrimming) {
    const auto j = extract_json("  \n{\"name\": \"Alice\", \"age\": 30}\n", JsonExtraction::whole);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->value["age"], 30);
    EXPECT_EQ(j->found_by, JsonExtraction::whole);
    EXPECT_FALSE(extract_json("Sure! {\"a\": 1}", JsonExtraction::whole));
    EXPECT_FALSE(extract_json("", JsonExtraction::whole));
}

TEST(JsonExtraction, FencedTakesTheFirstJsonOrUntaggedFence) {
    const std::string out = "Here:\n```python\nprint({'a': 1})\n```\nand\n```json\n{\"a\": 2}\n```\n```json\n{\"a\": 3}\n```";
    const auto j = extract_json(out, JsonExtraction::fenced);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->value["a"], 2);
    EXPECT_EQ(j->text, "{\"a\": 2}");
    EXPECT_EQ(extract_json("```\n[1, 2]\n```", JsonExtraction::fenced)->value.size(), 2u);
    EXPECT_EQ(extract_json("```JSON {\"b\": true}```", JsonExtraction::fenced)->value["b"], true);
    // An unclosed fence runs to the end of the output (generation stopped by max_tokens or EOS).
    EXPECT_EQ(extract_json("```json\n{\"c\": null}\n", JsonExtraction::fenced)->value["c"], nullptr);
    // The first json fence does not parse: nothing, even if a later one would.
    EXPECT_FALSE(extract_json("```json\n{oops}\n```\n```json\n{}\n```", JsonExtraction::fenced));
    EXPECT_FALSE(extract_json("{\"a\": 1}", JsonExtraction::fenced));
}

TEST(JsonExtraction, BracesFindTheFirstBalancedValueThatParses) {
    const auto j = extract_json("The answer is {\"s\": \"a } inside\", \"n\": [1, {\"m\": 2}]} as asked {\"x\": 0}", JsonExtraction::braces);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->value["s"], "a } inside");
    EXPECT_EQ(j->value["n"][1]["m"], 2);
    // {not json} is balanced but does not parse: the scan moves on to the next candidate.
    EXPECT_EQ(extract_json("{not json} then [3, 4]", JsonExtraction::braces)->value, nlohmann::json::parse("[3, 4]"));
    EXPECT_FALSE(extract_json("{\"a\": 1", JsonExtraction::braces));
    EXPECT_FALSE(extract_json("{\"a\": [1}", JsonExtraction::braces));
    EXPECT_FALSE(extract_json("no json here", JsonExtraction::braces));
}

TEST(JsonExtraction, FirstTriesWholeThenFencedThenBraces) {
    EXPECT_EQ(extract_json("[1]", JsonExtraction::first)->found_by, JsonExtraction::whole);
    EXPECT_EQ(extract_json("Here {\"a\": 0}\n```json\n{\"a\": 1}\n```", JsonExtraction::first)->found_by, JsonExtraction::fenced);
    EXPECT_EQ(extract_json("Here {\"a\": 0}\n```json\n{\"a\": 1}\n```", JsonExtraction::first)->value["a"], 1);
    EXPECT_EQ(extract_json("Here {\"a\": 0}.", JsonExtraction::first)->found_by, JsonExtraction::braces);
    EXPECT_FALSE(extract_json("nothing", JsonExtraction::first));
}

TEST(JsonExtraction, DuplicateKeysKeepTheLastAndDeepNestingIsRefused) {
    EXPECT_EQ(extract_json("{\"a\": 1, \"a\": 2}")->value["a"], 2);  // as Python's json.loads
    const std::string deep = std::string(kExtractedJsonMaxDepth, '[') + std::string(kExtractedJsonMaxDepth, ']');
    EXPECT_TRUE(extract_json(deep));
    EXPECT_FALSE(extract_json("[" + deep + "]", JsonExtraction::whole));
    // braces skips the too-deep outer value and finds the inner one.
    EXPECT_EQ(extract_json("[" + deep + "]", JsonExtraction::braces)->text, deep);
    EXPECT_FALSE(parse_json_text("NaN"));
    EXPECT_EQ(*parse_json_text(" 1.5 "), 1.5);
}

TEST(JsonExtraction, NamesRoundTrip) {
    for (auto e : {JsonExtraction::whole, JsonExtraction::fenced, JsonExtraction::braces, JsonExtraction::first})
        EXPECT_EQ(parse_json_extraction(json_extraction_name(e)), e);
    EXPECT_FALSE(parse_json_extraction("auto"));
}

}  // namespace
}  // namespace ql::evaluation
