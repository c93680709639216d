// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/generation/chat_prompt.h"

#include "engine/core/errors.h"
#include "engine/text/chat_template.h"

namespace ql {

ChatPrompt chat_prompt(const ModelText& text, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                       bool add_generation_prompt) {
    if (!text.chat_template)
        throw UserError("chat: the model has no chat template (no tokenizer.chat_template in a GGUF file, no chat_template "
                        "in tokenizer_config.json or chat_template.jinja in a folder): give a plain prompt instead");
    if (!messages.is_array() || messages.empty()) throw UserError("chat: messages must be a non-empty list");
    for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i].is_object() || !messages[i].contains("role") || !messages[i]["role"].is_string())
            throw UserError("chat: message " + std::to_string(i) + " has no role");
    const ChatTemplate tmpl = ChatTemplate::parse(*text.chat_template, text.chat_template_origin);
    ChatTemplateInput input;
    input.messages = messages;
    input.tools = tools;
    input.add_generation_prompt = add_generation_prompt;
    // transformers passes the special tokens the tokenizer has; an unset one stays undefined.
    if (!text.bos_token.empty()) input.bos_token = text.bos_token;
    if (!text.eos_token.empty()) input.eos_token = text.eos_token;
    ChatPrompt p;
    p.rendered = tmpl.render(input);
    p.ids = text.encode_rendered(p.rendered);
    p.template_sha256 = tmpl.sha256();
    return p;
}

nlohmann::ordered_json user_turn(const std::string& prompt, const std::string& system) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    return messages;
}

}  // namespace ql
