// SPDX-License-Identifier: GPL-3.0-or-later
// Eval suite files (docs/EVAL_SUITES.md): what a good line becomes, and for every kind of bad
// line the UserError naming file, line and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/evaluation/eval_suite.h"
#include "engine/evaluation/json_schema.h"
#include "engine/io/sha256.h"
#include "tests/engine/user_error_text.h"

namespace ql::evaluation {
namespace {

const char* kGoodSuite =
    R"({"id": "add-1", "category": "arithmetic", "prompt": "What is 2 + 3?", "max_tokens": 8, "check": {"type": "numeric", "value": 5}})"
    "\n"
    R"({"id": "add-1-typo", "category": "adversarial", "variant_of": "add-1", "variant": "typo", "prompt": "Waht is 2 + 3?", "check": {"type": "numeric", "value": 5, "position": "first", "tolerance": 0.5}})"
    "\r\n\n"
    R"({"id": "capital", "category": "facts", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}], "check": {"type": "exact", "answer": "Paris", "normalize": ["strip", "strip_punctuation", "lowercase"]}})"
    "\n"
    R"({"id": "weather", "category": "tool_calls", "prompt": "Weather in Paris?", "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}], "check": {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}}})"
    "\n"
    R"({"id": "person", "category": "json", "prompt": "JSON for Alice, 30", "check": {"type": "json_schema", "schema": {"type": "object", "required": ["name", "age"]}, "extract": "fenced", "expected": {"name": "Alice", "age": 30}}})"
    "\n"
    R"({"id": "short", "category": "instructions", "prompt": "Describe a cat in lowercase.", "check": {"type": "instructions", "constraints": [{"kind": "word_count", "max": 20}, {"kind": "lowercase"}, {"kind": "forbidden_words", "words": ["dog"]}]}})"
    "\n";

TEST(EvalSuite, ParsesItemsChecksToolsAndVariants) {
    const EvalSuite s = parse_eval_suite(kGoodSuite, "good.jsonl");
    EXPECT_EQ(s.sha256, sha256_hex(kGoodSuite, std::strlen(kGoodSuite)));
    ASSERT_EQ(s.items.size(), 6u);
    EXPECT_EQ(s.categories(), (std::vector<std::string>{"arithmetic", "adversarial", "facts", "tool_calls", "json", "instructions"}));

    const EvalItem& add = s.items[0];
    EXPECT_EQ(add.line, 1);
    EXPECT_EQ(add.max_tokens, 8);
    EXPECT_EQ(check_type(add.check), "numeric");
    EXPECT_TRUE(std::get<NumericCheck>(add.check).last);
    EXPECT_EQ(add.conversation().dump(), R"([{"role":"user","content":"What is 2 + 3?"}])");

    const EvalItem& typo = s.items[1];
    EXPECT_EQ(typo.line, 2);
    EXPECT_EQ(typo.variant_of, "add-1");
    EXPECT_EQ(typo.variant, "typo");
    EXPECT_FALSE(typo.max_tokens.has_value());
    EXPECT_FALSE(std::get<NumericCheck>(typo.check).last);
    EXPECT_EQ(std::get<NumericCheck>(typo.check).tolerance, 0.5);

    const EvalItem& capital = s.items[2];
    EXPECT_EQ(capital.line, 4);  // line 3 is blank; line 2 ended with \r\n
    EXPECT_FALSE(capital.prompt.has_value());
    EXPECT_EQ(capital.conversation().size(), 2u);
    const auto& exact = std::get<ExactCheck>(capital.check);
    EXPECT_TRUE(exact.strip && exact.strip_punctuation && exact.lowercase);

    const EvalItem& weather = s.items[3];
    ASSERT_EQ(weather.tool_specs.size(), 1u);
    EXPECT_EQ(weather.tool("get_weather"), &weather.tool_specs[0]);
    EXPECT_EQ(weather.tool("nope"), nullptr);
    EXPECT_TRUE(weather.tool_specs[0].parameters->valid(nlohmann::json{{"city", "Oslo"}}));
    EXPECT_FALSE(weather.tool_specs[0].parameters->valid(nlohmann::json{{"unit", "c"}}));
    // Tools keep the file's key order (a chat template prints them as given).
    EXPECT_EQ(weather.tools[0]["function"].begin().key(), "name");
    EXPECT_EQ(weather.check_json["type"], "tool_call");

    const auto& person = std::get<JsonSchemaCheck>(s.items[4].check);
    EXPECT_EQ(person.extract, JsonExtraction::fenced);
    EXPECT_EQ(person.expected->at("age"), 30);

    const auto& instructions = std::get<InstructionsCheck>(s.items[5].check);
    ASSERT_EQ(instructions.constraints.size(), 3u);
    EXPECT_EQ(instructions.constraints[0].max, 20);
    EXPECT_FALSE(instructions.constraints[0].min.has_value());
    EXPECT_EQ(instructions.constraints[2].words, std::vector<std::string>{"dog"});

    EXPECT_EQ(s.find("person"), &s.items[4]);
    EXPECT_EQ(s.find("missing"), nullptr);
}

TEST(EvalSuite, ExactNormalisesByStripAlone) {
    const EvalSuite s = parse_eval_suite(R"({"id": "a", "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s");
    const auto& e = std::get<ExactCheck>(s.items[0].check);
    EXPECT_TRUE(e.strip);
    EXPECT_FALSE(e.strip_punctuation || e.lowercase);
    const EvalSuite none =
        parse_eval_suite(R"({"id": "a", "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x", "normalize": []}})", "s");
    EXPECT_FALSE(std::get<ExactCheck>(none.items[0].check).strip);
}

// Each bad line, alone in a file after one good line (so the error is on line 2).
struct BadLine {
    std::string line, message;
};

std::string bad_line_error(const std::string& line) {
    const std::string good = R"({"id": "ok", "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})";
    return test::user_error_text([&] { parse_eval_suite(good + "\n" + line + "\n", "s.jsonl"); });
}

std::string item(const std::string& fields) { return "{\"id\": \"i\", \"category\": \"c\", " + fields + "}"; }
std::string with_check(const std::string& check) { return item("\"prompt\": \"p\", \"check\": " + check); }
const std::string kTool =
    R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}])";

TEST(EvalSuite, EveryBadLineNamesFileLineAndField) {
    const std::vector<BadLine> cases = {
        {"\xff{}", "s.jsonl:2: not UTF-8 (byte 1 of the line)"},
        {"{\"id\": ", "s.jsonl:2: not a JSON object: parse error at line 1, column 8"},
        {R"({"id": "a", "id": "b"})", "s.jsonl:2: not a JSON object: duplicate key \"id\""},
        {"[1, 2]", "s.jsonl:2: expected one JSON object per line"},
        {item(R"("prompt": "p", "check": {"type": "exact", "answer": "x"}, "colour": 1)"), "s.jsonl:2: colour: unknown key (expected one of id, category, prompt, messages, tools, variant_of, variant, max_tokens, check)"},
        {R"({"category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: id: missing"},
        {R"({"id": 7, "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: id: expected a string"},
        {R"({"id": "a b", "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: id: expected 1 to 128 letters, digits, _ - . or :"},
        {R"({"id": "ok", "category": "c", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: id: \"ok\" was already used on line 1"},
        {R"({"id": "i", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: category: missing"},
        {R"({"id": "i", "category": "a.b", "prompt": "p", "check": {"type": "exact", "answer": "x"}})", "s.jsonl:2: category: expected 1 to 128 letters, digits, _ or -"},
        {item(R"("check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: prompt: give either prompt or messages (exactly one)"},
        {item(R"("prompt": "p", "messages": [{"role": "user", "content": "p"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages: give either prompt or messages (exactly one)"},
        {item(R"("prompt": "", "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: prompt: expected a non-empty string"},
        {item(R"("messages": [], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages: expected a non-empty list of chat messages"},
        {item(R"("messages": ["hi"], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages[0]: expected an object {\"role\": ..., \"content\": ...}"},
        {item(R"("messages": [{"role": "robot", "content": "hi"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages[0].role: expected system, user, assistant or tool, not \"robot\""},
        {item(R"("messages": [{"role": "user"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages[0].content: missing"},
        {item(R"("messages": [{"role": "user", "content": "hi", "mood": "x"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages[0].mood: unknown key (expected one of role, content, name, tool_calls, tool_call_id)"},
        {item(R"("messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: messages[1].role: the last message must be the user's (or a tool's)"},
        {item(R"("prompt": "p", "tools": {}, "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools: expected a non-empty list of function specs"},
        {item(R"("prompt": "p", "tools": [{"type": "tool", "function": {"name": "f"}}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools[0].type: expected \"function\""},
        {item(R"("prompt": "p", "tools": [{"type": "function"}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools[0].function: expected an object"},
        {item(R"("prompt": "p", "tools": [{"type": "function", "function": {"name": "f", "returns": 1}}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools[0].function.returns: unknown key (expected one of name, description, parameters)"},
        {item(R"("prompt": "p", "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools[1].function.name: a second tool named \"f\""},
        {item(R"("prompt": "p", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"$ref": "http://example.com/s.json"}}}], "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: tools[0].function.parameters: not a usable JSON Schema: remote $ref 'http://example.com/s.json' (only references inside the schema are allowed)"},
        {item(R"("prompt": "p", "variant_of": "ok", "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: variant: variant and variant_of go together"},
        {item(R"("prompt": "p", "variant_of": "i", "variant": "typo", "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: variant_of: an item cannot be a variant of itself"},
        {item(R"("prompt": "p", "variant_of": "nobody", "variant": "typo", "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: variant_of: no item has the id \"nobody\""},
        {item(R"("prompt": "p", "max_tokens": 0, "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: max_tokens: expected an integer from 1 to 1048576"},
        {item(R"("prompt": "p", "max_tokens": 1.5, "check": {"type": "exact", "answer": "x"})"), "s.jsonl:2: max_tokens: expected an integer from 1 to 1048576"},
        {item(R"("prompt": "p")"), "s.jsonl:2: check: missing"},
        {with_check(R"({"answer": "x"})"), "s.jsonl:2: check.type: missing"},
        {with_check(R"({"type": "bleu"})"), "s.jsonl:2: check.type: unknown check \"bleu\" (expected exact, numeric, regex, choice, contains, not_contains, json_schema, tool_call or instructions)"},
        {with_check(R"({"type": "exact"})"), "s.jsonl:2: check.answer: missing"},
        {with_check(R"({"type": "exact", "answer": "x", "normalize": ["casefold"]})"), "s.jsonl:2: check.normalize[0]: expected strip, strip_punctuation or lowercase, not \"casefold\""},
        {with_check(R"({"type": "exact", "answer": "x", "fuzzy": true})"), "s.jsonl:2: check.fuzzy: unknown key (expected one of type, answer, normalize)"},
        {with_check(R"({"type": "numeric"})"), "s.jsonl:2: check.value: missing"},
        {with_check(R"({"type": "numeric", "value": "5"})"), "s.jsonl:2: check.value: expected a number"},
        {with_check(R"({"type": "numeric", "value": 5, "tolerance": -1})"), "s.jsonl:2: check.tolerance: expected a number >= 0"},
        {with_check(R"({"type": "numeric", "value": 5, "position": "middle"})"), "s.jsonl:2: check.position: expected \"first\" or \"last\""},
        {with_check(R"({"type": "regex", "pattern": "a("})"), "s.jsonl:2: check.pattern: invalid regular expression 'a(': missing closing parenthesis (at offset 2)"},
        {with_check(R"({"type": "choice", "options": ["A"], "answer": "A"})"), "s.jsonl:2: check.options: expected a list of 2 or more strings"},
        {with_check(R"({"type": "choice", "options": ["Paris", "paris"], "answer": "Paris"})"), "s.jsonl:2: check.options[1]: repeats an option"},
        {with_check(R"({"type": "choice", "options": ["A", "B"], "answer": "C"})"), "s.jsonl:2: check.answer: expected one of the options"},
        {with_check(R"({"type": "contains", "strings": []})"), "s.jsonl:2: check.strings: expected a list of 1 or more strings"},
        {with_check(R"({"type": "not_contains", "strings": ["x"], "mode": "most"})"), "s.jsonl:2: check.mode: expected \"all\" or \"any\""},
        {with_check(R"({"type": "contains", "strings": ["x"], "ignore_case": "yes"})"), "s.jsonl:2: check.ignore_case: expected true or false"},
        {with_check(R"({"type": "json_schema", "schema": "object"})"), "s.jsonl:2: check.schema: expected a JSON Schema (object or boolean)"},
        {with_check(R"({"type": "json_schema", "schema": {"type": "object", "properties": {"a": {"pattern": "("}}}})"), "s.jsonl:2: check.schema: not a usable JSON Schema: invalid pattern '(': "},
        {with_check(R"({"type": "json_schema", "schema": {}, "extract": "last"})"), "s.jsonl:2: check.extract: expected whole, fenced, braces or first"},
        {with_check(R"({"type": "json_schema", "schema": {"required": ["a"]}, "expected": {"b": 1}})"), "s.jsonl:2: check.expected: not valid against check.schema"},
        {with_check(R"({"type": "tool_call", "name": "f"})"), "s.jsonl:2: tools: a tool_call check needs the tools offered"},
        {item("\"prompt\": \"p\", " + kTool + R"(, "check": {"type": "tool_call", "name": "g"})"), "s.jsonl:2: check.name: \"g\" is not one of the tools"},
        {item("\"prompt\": \"p\", " + kTool + R"(, "check": {"type": "tool_call", "name": "f", "arguments": {"n": "two"}})"), "s.jsonl:2: check.arguments: not valid against the tool's parameters"},
        {with_check(R"({"type": "instructions", "constraints": []})"), "s.jsonl:2: check.constraints: expected a non-empty list"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "haiku"}]})"), "s.jsonl:2: check.constraints[0].kind: unknown constraint \"haiku\""},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "lowercase"}, {"kind": "word_count", "max": -3}]})"), "s.jsonl:2: check.constraints[1].max: expected an integer >= 0"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "word_count"}]})"), "s.jsonl:2: check.constraints[0].min/max: give at least one bound"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "word_count", "min": 5, "max": 2}]})"), "s.jsonl:2: check.constraints[0].min: greater than max"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "lowercase", "max": 2}]})"), "s.jsonl:2: check.constraints[0]: unknown key \"max\" for lowercase"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "forbidden_words", "words": [""]}]})"), "s.jsonl:2: check.constraints[0].words: expected a non-empty list of non-empty strings"},
        {with_check(R"({"type": "instructions", "constraints": [{"kind": "ends_with"}]})"), "s.jsonl:2: check.constraints[0].text: missing"},
    };
    for (const auto& c : cases) {
        const std::string got = bad_line_error(c.line);
        // Messages from PCRE2, nlohmann and std::regex are matched by their start only.
        EXPECT_EQ(got.substr(0, c.message.size()), c.message) << c.line;
    }
}

TEST(EvalSuite, AFileWithoutItemsAndAMissingFileAreUserErrors) {
    EXPECT_EQ(test::user_error_text([] { parse_eval_suite("\n  \n", "empty.jsonl"); }),
              "empty.jsonl: no items (an eval suite has one JSON object per line)");
    EXPECT_EQ(test::user_error_text([] { load_eval_suite("/nonexistent/suite.jsonl"); }).substr(0, 45),
              "/nonexistent/suite.jsonl: cannot open the eva");
}

TEST(EvalSuite, LoadNamesThePathAndHashesTheBytes) {
    const auto dir = std::filesystem::temp_directory_path() / "ql_eval_suite_test";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "suite.jsonl").string();
    const std::string bytes =
        std::string(kGoodSuite) + R"x({"id": "x", "category": "c", "prompt": "p", "check": {"type": "regex", "pattern": "("}})x" + "\n";
    std::ofstream(path, std::ios::binary) << bytes;
    const std::string expected = path + ":8: check.pattern: invalid regular expression '(':";
    EXPECT_EQ(test::user_error_text([&] { load_eval_suite(path); }).substr(0, expected.size()), expected);
    std::ofstream(path, std::ios::binary) << kGoodSuite;
    const EvalSuite s = load_eval_suite(path);
    EXPECT_EQ(s.source, path);
    EXPECT_EQ(s.sha256, sha256_file_hex(path));
    std::filesystem::remove_all(dir);
}

TEST(EvalSuite, PatternsAreCompiledInSchemasButNotInTheirData) {
    // {"pattern": "("} as a value of const is data: it loads; as a keyword it does not.
    const EvalSuite s = parse_eval_suite(
        R"x({"id": "a", "category": "c", "prompt": "p", "check": {"type": "json_schema", "schema": {"const": {"pattern": "("}}}})x", "s");
    EXPECT_TRUE(std::get<JsonSchemaCheck>(s.items[0].check).validator->valid(nlohmann::json::parse(R"x({"pattern": "("})x")));
    EXPECT_NE(test::user_error_text([] {
                  parse_eval_suite(R"x({"id": "a", "category": "c", "prompt": "p", "check": {"type": "json_schema", "schema": {"pattern": "("}}})x", "s");
              }).find("invalid pattern '('"),
              std::string::npos);
}

TEST(EvalSuite, ValuesEqualComparesNumbersByValueAndStringsLoosely) {
    using nlohmann::json;
    EXPECT_TRUE(values_equal(json(30), json(30.0)));
    EXPECT_FALSE(values_equal(json(30), json(31)));
    EXPECT_FALSE(values_equal(json(30), json("30")));
    EXPECT_TRUE(values_equal(json("Paris"), json(" paris ")));
    EXPECT_TRUE(values_equal(json::parse(R"({"a": [1, "X"]})"), json::parse(R"({"a": [1.0, "x"]})")));
    EXPECT_FALSE(values_equal(json::parse(R"({"a": 1})"), json::parse(R"({"a": 1, "b": 2})")));
    EXPECT_FALSE(values_equal(json::parse("[1, 2]"), json::parse("[2, 1]")));
    EXPECT_TRUE(values_equal(json(nullptr), json(nullptr)));
    EXPECT_FALSE(values_equal(json(true), json(1)));
}

}  // namespace
}  // namespace ql::evaluation
