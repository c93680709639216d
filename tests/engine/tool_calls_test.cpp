// SPDX-License-Identifier: GPL-3.0-or-later
// The function-call forms the tool_call check reads (docs/EVAL_SUITES.md "Tool calls").
#include <gtest/gtest.h>

#include "engine/evaluation/tool_calls.h"

namespace ql::evaluation {
namespace {

TEST(ToolCalls, HermesTagsOneOrMoreAndAnUnclosedLastOne) {
    const auto calls = parse_tool_calls(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}");
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments["city"], "Paris");
    EXPECT_TRUE(calls[0].arguments_parsed);
    EXPECT_EQ(calls[0].form, "tool_call_tag");
    EXPECT_EQ(calls[1].name, "get_time");
    // With tags present, JSON outside them is not read.
    EXPECT_TRUE(parse_tool_calls("{\"name\": \"f\", \"arguments\": {}} <tool_call>not json</tool_call>").empty());
}

TEST(ToolCalls, BareObjectsListsAndLlamaParameters) {
    auto calls = parse_tool_calls("{\"name\": \"f\", \"arguments\": {\"x\": 1}}");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].form, "json");
    calls = parse_tool_calls("```json\n[{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"parameters\": {\"y\": 2}}]\n```");
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[1].name, "g");
    EXPECT_EQ(calls[1].arguments["y"], 2);
    calls = parse_tool_calls("I will call {\"name\": \"f\"} now");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_FALSE(calls[0].arguments_parsed);
    EXPECT_TRUE(calls[0].arguments.is_null());
}

TEST(ToolCalls, OpenAiFormsWithStringArguments) {
    auto calls = parse_tool_calls(R"({"type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Oslo\"}"}})");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].form, "openai");
    EXPECT_EQ(calls[0].arguments["city"], "Oslo");
    calls = parse_tool_calls(R"({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a", "arguments": {}}}, {"function": {"name": "b", "arguments": "not json"}}]})");
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_TRUE(calls[0].arguments_parsed);
    EXPECT_EQ(calls[1].name, "b");
    EXPECT_FALSE(calls[1].arguments_parsed);
    EXPECT_TRUE(parse_tool_calls(R"({"type": "tool", "function": {"name": "f"}})").empty());
}

TEST(ToolCalls, NothingThatIsNotACall) {
    EXPECT_TRUE(parse_tool_calls("The weather in Paris is sunny.").empty());
    EXPECT_TRUE(parse_tool_calls("{\"city\": \"Paris\"}").empty());
    EXPECT_TRUE(parse_tool_calls("{\"name\": 3, \"arguments\": {}}").empty());
    EXPECT_TRUE(parse_tool_calls("[1, 2]").empty());
}

}  // namespace
}  // namespace ql::evaluation
