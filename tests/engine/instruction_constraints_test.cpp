// SPDX-License-Identifier: GPL-3.0-or-later
// IFEval-style constraints (docs/EVAL_SUITES.md "Instruction constraints"). Where a kind follows
// IFEval's checker (lm-evaluation-harness lm_eval/tasks/ifeval/instructions.py), the expected
// counts were computed with its Python expressions, e.g.
//   len(re.findall(r"\w+", "Hello, world! It's 3.5 degrees."))                          -> 7
//   len(re.findall(r"^\s*\*[^\*].*$", s, re.M)) + len(re.findall(r"^\s*-.*$", s, re.M)) -> 4
//   len(re.findall("cat", "The cat and the Cat, concatenated", re.I))                   -> 3
//   "hello world 123".islower(), "123".islower(), "HELLO World".isupper(), "ǅ".isupper() -> True False False False
#include <gtest/gtest.h>

#include "engine/evaluation/instruction_constraints.h"

namespace ql::evaluation {
namespace {

InstructionConstraint constraint(const std::string& json) { return parse_instruction_constraint(nlohmann::json::parse(json)); }
bool holds(const std::string& json, const std::string& output) { return check_constraint(constraint(json), output).passed; }

TEST(InstructionConstraints, CountsFollowIfeval) {
    EXPECT_EQ(word_count("Hello, world! It's 3.5 degrees."), 7);
    EXPECT_EQ(word_count(""), 0);
    EXPECT_EQ(word_count("naïve café"), 2);
    EXPECT_EQ(bullet_count("* one\n* two\n- three\n**bold** line\n  - four\n"), 4);
    EXPECT_EQ(bullet_count("no bullets\n"), 0);
}

TEST(InstructionConstraints, SentencesEndAtTerminatorsFollowedBySpace) {
    EXPECT_EQ(sentence_count("Hi there. How are you? Fine!! 3.5 is a number"), 4);
    EXPECT_EQ(sentence_count("One sentence."), 1);
    EXPECT_EQ(sentence_count("Dr. Smith arrived."), 2);  // the simple rule splits after "Dr."
    EXPECT_EQ(sentence_count("... !"), 0);               // terminators without words are no sentences
    EXPECT_EQ(sentence_count(""), 0);
}

TEST(InstructionConstraints, CountingKindsCompareWithInclusiveBounds) {
    EXPECT_TRUE(holds(R"({"kind": "word_count", "min": 3, "max": 3})", "one two three"));
    EXPECT_FALSE(holds(R"({"kind": "word_count", "max": 2})", "one two three"));
    EXPECT_FALSE(holds(R"({"kind": "sentence_count", "min": 2})", "Only one."));
    EXPECT_TRUE(holds(R"({"kind": "bullet_count", "min": 2, "max": 2})", "* a\n* b"));
    const ConstraintResult r = check_constraint(constraint(R"({"kind": "keyword_frequency", "text": "cat", "min": 3})"),
                                                "The cat and the Cat, concatenated");
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.measured, "3 occurrences");
    EXPECT_EQ(check_constraint(constraint(R"({"kind": "word_count", "max": 1})"), "a b").measured, "2 words");
}

TEST(InstructionConstraints, KeywordsAndForbiddenWordsAndCharacters) {
    EXPECT_TRUE(holds(R"({"kind": "required_keywords", "words": ["Paris", "france"]})", "paris is in France"));
    const auto missing = check_constraint(constraint(R"({"kind": "required_keywords", "words": ["Paris", "Rome"]})"), "Paris");
    EXPECT_FALSE(missing.passed);
    EXPECT_EQ(missing.measured, "missing \"Rome\"");
    EXPECT_TRUE(holds(R"({"kind": "forbidden_words", "words": ["dog"]})", "a hotdog stand"));  // whole words only
    EXPECT_FALSE(holds(R"({"kind": "forbidden_words", "words": ["dog"]})", "My Dog!"));
    EXPECT_FALSE(holds(R"({"kind": "forbidden_chars", "text": "!?"})", "Hi!"));
    EXPECT_TRUE(holds(R"({"kind": "forbidden_chars", "text": "é"})", "cafe"));
    EXPECT_FALSE(holds(R"({"kind": "forbidden_chars", "text": "é"})", "café"));
    EXPECT_TRUE(holds(R"({"kind": "no_commas"})", "No commas here."));
    EXPECT_FALSE(holds(R"({"kind": "no_commas"})", "Yes, one."));
}

TEST(InstructionConstraints, StartAndEnd) {
    EXPECT_TRUE(holds(R"({"kind": "starts_with", "text": "Sure"})", "  sure, here it is"));
    EXPECT_FALSE(holds(R"({"kind": "starts_with", "text": "Sure"})", "Here: sure"));
    // IFEval EndChecker: surrounding whitespace and double quotes are ignored.
    EXPECT_TRUE(holds(R"({"kind": "ends_with", "text": "Any other questions?"})", "\"Done. any other questions?\"\n"));
    EXPECT_FALSE(holds(R"({"kind": "ends_with", "text": "Any other questions?"})", "Any other questions? Bye."));
}

TEST(InstructionConstraints, CaseFollowsPythonIslowerAndIsupper) {
    EXPECT_TRUE(holds(R"({"kind": "lowercase"})", "hello world 123"));
    EXPECT_FALSE(holds(R"({"kind": "lowercase"})", "Hello"));
    EXPECT_FALSE(holds(R"({"kind": "lowercase"})", "123"));  // no cased character
    EXPECT_TRUE(holds(R"({"kind": "uppercase"})", "HELLO 1"));
    EXPECT_FALSE(holds(R"({"kind": "uppercase"})", "HELLO World"));
    EXPECT_FALSE(holds(R"({"kind": "uppercase"})", "\xC7\x85"));  // U+01C5, a title-case letter
    EXPECT_TRUE(holds(R"({"kind": "lowercase"})", "\xC3\xA9t\xC3\xA9"));  // "été"
}

TEST(InstructionConstraints, FormatKinds) {
    EXPECT_TRUE(holds(R"({"kind": "json_format"})", "```json\n{\"a\": 1}\n```"));
    EXPECT_TRUE(holds(R"({"kind": "json_format"})", " [1, 2] "));
    EXPECT_FALSE(holds(R"({"kind": "json_format"})", "{a: 1}"));
    EXPECT_FALSE(holds(R"({"kind": "json_format"})", "Here: {\"a\": 1}"));
    EXPECT_TRUE(holds(R"({"kind": "quotation"})", " \"hi\" "));
    EXPECT_FALSE(holds(R"({"kind": "quotation"})", "\""));
    EXPECT_TRUE(holds(R"({"kind": "title"})", "<<My Poem>>\nroses are red"));
    EXPECT_FALSE(holds(R"({"kind": "title"})", "<< >> and <<a\nb>>"));
}

TEST(InstructionConstraints, ParseRejectsWhatCannotBeChecked) {
    auto error = [](const std::string& json) {
        try {
            constraint(json);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error(R"({"kind": "word_count"})"), "min/max: give at least one bound");
    EXPECT_EQ(error(R"({"kind": "word_count", "min": 1.5})"), "min: expected an integer >= 0");
    EXPECT_EQ(error(R"({"kind": "no_commas", "text": ","})"), "unknown key \"text\" for no_commas");
    EXPECT_EQ(error(R"({"max": 3})"), "kind: expected a string");
    EXPECT_EQ(error(R"([])"), "expected an object");
    // Round trip through the file form.
    const auto c = constraint(R"({"kind": "keyword_frequency", "text": "x", "min": 1, "max": 4})");
    EXPECT_EQ(instruction_constraint_json(c).dump(), R"({"kind":"keyword_frequency","min":1,"max":4,"text":"x"})");
    for (const char* k : {"word_count", "sentence_count", "bullet_count", "keyword_frequency", "required_keywords", "forbidden_words",
                          "forbidden_chars", "no_commas", "starts_with", "ends_with", "lowercase", "uppercase", "json_format", "quotation",
                          "title"})
        EXPECT_STREQ(constraint_kind_name(*parse_constraint_kind(k)), k);
}

}  // namespace
}  // namespace ql::evaluation
