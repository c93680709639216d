// SPDX-License-Identifier: GPL-3.0-or-later
// Tools folded into the system message (engine/evaluation/tool_prompt.h), for chat templates that
// ignore `tools`: the text, and transformers rendering Qwen2.5's template with `tools` giving the
// same prompt as with our folded conversation (tests/peers/tool_prompt_peer.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/evaluation/tool_prompt.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::evaluation {
namespace {

namespace fs = std::filesystem;
const std::string kQwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

TEST(ToolPrompt, PythonJsonDumpsSeparatorsAndEscapes) {
    const auto j = nlohmann::ordered_json::parse(R"({"b": [1, 2.5, true, null], "a": {"é": "tab\there \"q\" \u0001"}, "e": 1e-05, "f": 100.0})");
    // json.dumps(..., ensure_ascii=False) of the same value (Python 3.11).
    EXPECT_EQ(python_json_dumps(j), "{\"b\": [1, 2.5, true, null], \"a\": {\"é\": \"tab\\there \\\"q\\\" \\u0001\"}, \"e\": 1e-05, \"f\": 100.0}");
    EXPECT_EQ(python_json_dumps(nlohmann::ordered_json::array()), "[]");
    EXPECT_EQ(python_json_dumps(nlohmann::ordered_json::object()), "{}");
}

TEST(ToolPrompt, FoldsToolsIntoTheSystemMessage) {
    const EvalSuite s = parse_eval_suite(
        R"({"id": "a", "category": "t", "prompt": "Weather in Oslo?", "tools": [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}], "check": {"type": "tool_call", "name": "w"}})"
        "\n"
        R"({"id": "b", "category": "t", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "w"}}], "check": {"type": "exact", "answer": "x"}})"
        "\n"
        R"({"id": "c", "category": "t", "prompt": "No tools", "check": {"type": "exact", "answer": "x"}})",
        "s");
    const auto a = conversation_with_tools_in_system(s.items[0], "");
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0]["role"], "system");
    EXPECT_EQ(a[0]["content"],
              "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures "
              "within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"w\", \"parameters\": "
              "{\"type\": \"object\"}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments "
              "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
              "<args-json-object>}\n</tool_call>");
    EXPECT_EQ(a[1]["content"], "Weather in Oslo?");
    const auto b = conversation_with_tools_in_system(s.items[1], "ignored");
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0]["content"].get<std::string>().substr(0, 19), "Be brief.\n\n# Tools\n");
    EXPECT_EQ(conversation_with_tools_in_system(s.items[2], "x"), s.items[2].conversation());
}

TEST(ToolPromptPeer, TransformersRendersQwenTemplateWithToolsAsOurFoldedConversation) {
    const std::string python = test::peers_python();
    const EvalSuite suite = load_eval_suite(std::string(QUANTLAB_SOURCE_DIR) + "/resources/evalsuites/default.jsonl");
    const EvalSuite extra = parse_eval_suite(
        R"({"id": "sys", "category": "t", "messages": [{"role": "system", "content": "Réponds en français."}, {"role": "user", "content": "Quel temps fait-il ?"}], "tools": [{"type": "function", "function": {"name": "meteo", "description": "Le temps\tqu'il fait « ici »", "parameters": {"type": "object", "properties": {"ville": {"type": "string"}, "jours": {"type": "number", "minimum": 0.5, "maximum": 1e-05}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["ville"]}}}], "check": {"type": "exact", "answer": "x"}})",
        "extra");
    nlohmann::ordered_json cases = nlohmann::ordered_json::array();
    for (const EvalSuite* s : {&suite, &extra})
        for (const auto& item : s->items)
            if (!item.tools.is_null())
                cases.push_back({{"messages", item.conversation()}, {"tools", item.tools},
                                 {"folded", conversation_with_tools_in_system(item, kQwenDefaultSystem)}});
    EXPECT_EQ(cases.size(), 30u + 10u + 1u);  // tool_calls items, their variants, the extra one
    const fs::path dir = fs::temp_directory_path() / "ql_tool_prompt_peer";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "cases.json") << cases.dump();
    test::expect_peer_passes(python, "tool_prompt_peer.py", "'" + (dir / "cases.json").string() + "'", dir.string());
}

}  // namespace
}  // namespace ql::evaluation
