// SPDX-License-Identifier: GPL-3.0-or-later
// A conversation turned into a prompt the way transformers' apply_chat_template(...,
// tokenize=True) does it: the model's own chat template (ModelText::chat_template, rendered by
// engine/text/chat_template.h with the messages, tools, add_generation_prompt and the model's
// bos_token / eos_token), then the rendering tokenized without adding special tokens (the
// template writes them).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/loading/model_text.h"

namespace ql {

struct ChatPrompt {
    std::string rendered;        // the template's output
    std::vector<int64_t> ids;    // its tokens
    std::string template_sha256; // of the template source (manifests: which template was used)
};

// `messages`: [{"role": "system"|"user"|"assistant"|"tool", "content": ...}, ...];
// `tools`: null or a list of function specs. UserError when the model has no chat template (its
// origin named), when the template raises or breaks its limits (origin, line), or when the
// messages are not a list of objects with a role.
ChatPrompt chat_prompt(const ModelText& text, const nlohmann::ordered_json& messages,
                       const nlohmann::ordered_json& tools = nullptr, bool add_generation_prompt = true);

// One user turn (and an optional system turn before it) as messages.
nlohmann::ordered_json user_turn(const std::string& prompt, const std::string& system = "");

}  // namespace ql
