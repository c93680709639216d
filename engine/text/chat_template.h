// SPDX-License-Identifier: GPL-3.0-or-later
// A model's chat template (GGUF `tokenizer.chat_template`, tokenizer_config.json `chat_template`,
// chat_template.jinja) rendered as transformers' apply_chat_template(conversation, tools=...,
// add_generation_prompt=..., tokenize=False) renders it: the same Jinja language and environment
// (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls, transformers'
// tojson, raise_exception, strftime_now and {% generation %}), the same preparation of the inputs
// (None-valued message keys dropped, reasoning_content/thinking aliased, documents=None), byte for
// byte (tests/engine/chat_template_peer_test.cpp checks every template llama.cpp ships).
//
// A template is untrusted input: parse() refuses malformed templates, render() stops at the limits
// below; both throw UserError naming the template's origin, the line (and column for syntax
// errors) and what went wrong. A template's raise_exception("...") is a UserError carrying that
// message.
//
// Not supported (UserError when a template uses them): {% include %}, {% import %},
// {% extends %}, {% block %}, {% autoescape %}; the filters urlize, urlencode, wordwrap, xmlattr,
// filesizeformat, pprint, random, striptags; lipsum(); str.encode/translate/expandtabs/format_map;
// integers beyond 64 bits (Python's are unbounded); continue_final_message.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ql {

struct ChatTemplateInput {
    // [{"role": ..., "content": ..., "tool_calls"?: ..., "reasoning_content"?: ...}, ...] as
    // transformers takes them (content may be a string or a list of parts).
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    // null, or [{"type": "function", "function": {"name", "description", "parameters"}}, ...].
    nlohmann::ordered_json tools;
    bool add_generation_prompt = true;
    // The tokenizer's special tokens as transformers passes them (special_tokens_map); unset ones
    // are not passed, so the template sees them undefined.
    std::optional<std::string> bos_token, eos_token;
    // Further template variables (enable_thinking, reasoning_effort, date_string, ...): null or a
    // JSON object; they override bos_token/eos_token.
    nlohmann::ordered_json extra;
    // The time strftime_now() formats, as local broken-down time (year..second are read); unset:
    // the current local time.
    std::optional<std::tm> now;
};

struct ChatTemplateLimits {
    size_t max_output_bytes = 1 << 20;  // the rendering, and any string or list the template builds
    int64_t max_steps = 1'000'000;      // evaluation steps (expressions, loop iterations, copies)
    int max_depth = 64;                 // nested macro calls / call blocks / recursive loops
};

class ChatTemplate {
public:
    // Parses `source` (UTF-8, at most kMaxSourceBytes); `origin` names it in errors (a file path,
    // "model.gguf: tokenizer.chat_template" ...). Throws UserError with origin:line:column.
    static ChatTemplate parse(const std::string& source, const std::string& origin, ChatTemplateLimits limits = {});
    static constexpr size_t kMaxSourceBytes = 4 << 20;

    // The prompt text. Throws UserError (origin and line) on raise_exception, a limit, a type error
    // or an undefined value used where Python would raise; also when the input is malformed.
    std::string render(const ChatTemplateInput& input) const;

    const std::string& sha256() const;  // of the source bytes, 64 lowercase hex digits
    const std::string& origin() const;
    const std::string& source() const;

private:
    ChatTemplate() = default;
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

}  // namespace ql
