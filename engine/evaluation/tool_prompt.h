// SPDX-License-Identifier: GPL-3.0-or-later
// Offering an item's tools in the system message, for chat templates that ignore `tools`
// (SmolLM2's, docs/EVAL_SUITES.md "The file"): the text Qwen2.5's template writes for them
// (Hermes function calling: the specs inside <tools></tools>, calls asked for inside
// <tool_call></tool_call>), so that the model sees the same instructions a tool-aware template
// would give it. tests/engine/tool_prompt_test.cpp checks it against transformers rendering
// Qwen2.5-7B-Instruct's template. Plain C++ (nlohmann_json).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "engine/evaluation/eval_suite.h"

namespace ql::evaluation {

// `value` as Python's json.dumps(value, ensure_ascii=False) writes it (", " and ": " separators,
// keys in their order): what transformers' `tojson` filter gives a chat template.
std::string python_json_dumps(const nlohmann::ordered_json& value);

// The system message's content with `tools` offered: `system`, then (after "\n\n" when `system`
// is not empty) "# Tools ... <tools>\n{spec}\n...</tools> ... </tool_call>", as Qwen2.5's
// template writes it.
std::string tools_system_text(const std::string& system, const nlohmann::ordered_json& tools);

// The item's conversation with its tools folded into the system message: the first message's
// content when it is a system message, else a new first system message from `default_system`
// (the model's own default, or ""). Without tools, the conversation unchanged.
nlohmann::ordered_json conversation_with_tools_in_system(const EvalItem& item, const std::string& default_system);

}  // namespace ql::evaluation
