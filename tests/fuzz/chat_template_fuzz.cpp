// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the chat-template engine (engine/text/chat_template.h, plain C++): any
// input is a template source that either parses or throws ql::UserError; a parsed template renders
// a conversation with tools and tool calls, or throws ql::UserError, within small limits. Anything
// else escaping (another exception, a crash, a sanitizer report, a hang past -timeout) is a bug.
// Build and run with scripts/fuzz-chat-template (seeds: llama.cpp's templates and
// tests/data/chat_template_snippets.txt).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
#include "engine/text/chat_template.h"

namespace {

ql::ChatTemplateInput fuzz_input() {
    ql::ChatTemplateInput in;
    in.messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris? \u00e9\ud83d\ude42"},
        {"role": "assistant", "content": null, "reasoning_content": "think",
         "tool_calls": [{"id": "a1B2c3D4e", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"location": "Paris", "n": [1, 2.5, true]}}}]},
        {"role": "tool", "tool_call_id": "a1B2c3D4e", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "and now?"}, {"type": "image"}]}])");
    in.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
        "description": "Weather.", "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
        "required": ["location"]}}}])");
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.extra = {{"enable_thinking", true}, {"date_string", "26 Jul 2024"}};
    std::tm now{};
    now.tm_year = 125;
    now.tm_mon = 6;
    now.tm_mday = 26;
    in.now = now;
    return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ql::ChatTemplateInput input = fuzz_input();
    const std::string source(reinterpret_cast<const char*>(data), size);
    ql::ChatTemplateLimits limits;
    limits.max_output_bytes = 1 << 16;
    limits.max_steps = 20000;
    limits.max_depth = 16;
    try {
        const ql::ChatTemplate t = ql::ChatTemplate::parse(source, "fuzz", limits);
        for (const bool gen : {true, false}) {
            ql::ChatTemplateInput in = input;
            in.add_generation_prompt = gen;
            try {
                const std::string out = t.render(in);
                if (out.size() > limits.max_output_bytes) std::abort();
            } catch (const ql::UserError&) {
            }
        }
    } catch (const ql::UserError&) {
    }
    return 0;
}
