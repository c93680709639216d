// SPDX-License-Identifier: GPL-3.0-or-later
// A chat template read from a model file is untrusted input: whatever its bytes, parse() and
// render() either succeed or throw ql::UserError (never another exception, never a crash), and
// templates built to run away (endless loops, unbounded recursion, exploding strings and lists,
// deep nesting) stop at the limits. Mutants are derived deterministically from the snippets of
// tests/data/chat_template_snippets.txt and a ChatML template. (scripts/fuzz-chat-template runs
// the same property under libFuzzer with sanitizers.)
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/chat_template.h"

namespace ql {
namespace {

using json = nlohmann::ordered_json;

ChatTemplateInput robustness_input() {
    ChatTemplateInput in;
    in.messages = json::parse(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris? \u00e9"},
        {"role": "assistant", "content": null, "reasoning_content": "think",
         "tool_calls": [{"id": "a1B2c3D4e", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "a1B2c3D4e", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "and now?"}, {"type": "image"}]}])");
    in.tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}])");
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.extra = {{"enable_thinking", true}};
    std::tm now{};
    now.tm_year = 125;
    now.tm_mday = 1;
    in.now = now;
    return in;
}

ChatTemplateLimits small_limits() {
    ChatTemplateLimits l;
    l.max_output_bytes = 1 << 16;
    l.max_steps = 20000;
    l.max_depth = 16;
    return l;
}

// Parses and renders; returns "" on success or the UserError's message. Any other exception fails
// the test (a crash fails the whole binary).
std::string outcome(const std::string& source, const ChatTemplateLimits& limits = small_limits()) {
    static const ChatTemplateInput input = robustness_input();
    try {
        const std::string out = ChatTemplate::parse(source, "mutant", limits).render(input);
        EXPECT_LE(out.size(), limits.max_output_bytes);
        return std::string();
    } catch (const UserError& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a UserError: " << e.what() << "\nfor: " << source;
    } catch (...) {
        ADD_FAILURE() << "unknown exception for: " << source;
    }
    return "other";
}

std::vector<std::string> seed_templates() {
    std::ifstream in(std::string(QUANTLAB_TEST_DATA_DIR) + "/chat_template_snippets.txt", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> seeds;
    std::string current;
    bool started = false;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(pos, end - pos);
        if (line.rfind("### ", 0) == 0) {
            if (started) seeds.push_back(current);
            started = true;
            current.clear();
        } else if (started) {
            current += line + "\n";
        }
        pos = end + 1;
    }
    if (started) seeds.push_back(current);
    seeds.push_back(
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
        "You are helpful<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
    return seeds;
}

TEST(ChatTemplateRobustness, MutatedTemplatesOnlyThrowUserError) {
    const std::vector<std::string> seeds = seed_templates();
    ASSERT_GT(seeds.size(), 100u);
    static const char* const kTokens[] = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "+", "(", ")", "[", "]", "{", "}", "|",
                                          "'", "\"", "\\", ",", ":", ".", "*", "**", "~", " is ", " in ", " not ",
                                          " if ", " else ", "endfor", "endif", "endmacro", "loop", "caller()", "ns.x",
                                          "range(99999)", "1e308", "0", "-1", "\xc3\xa9", "\xff", "\n", " recursive",
                                          "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "|tojson", "|map('upper')",
                                          "messages", "tools", "raise_exception", "{% break %}", "{% set x = x ~ x %}"};
    std::mt19937_64 rng(20250726);
    size_t outcomes_ok = 0, outcomes_error = 0;
    for (int n = 0; n < 4000; ++n) {
        std::string s = seeds[rng() % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
            switch (rng() % 5) {
            case 0: s.insert(at, kTokens[rng() % std::size(kTokens)]); break;
            case 1:
                if (!s.empty()) s.erase(at % s.size(), 1 + rng() % 8);
                break;
            case 2:
                if (!s.empty()) s[at % s.size()] = static_cast<char>(rng() % 256);
                break;
            case 3: {
                const std::string& other = seeds[rng() % seeds.size()];
                if (!other.empty()) {
                    const size_t b = rng() % other.size();
                    s.insert(at, other.substr(b, 1 + rng() % 64));
                }
                break;
            }
            default:
                if (!s.empty()) {
                    const size_t b = at % s.size();
                    s.insert(at, s.substr(b, 1 + rng() % 32));
                }
            }
        }
        if (outcome(s).empty())
            ++outcomes_ok;
        else
            ++outcomes_error;
    }
    // Both kinds occur: the mutants are neither all broken nor all harmless.
    EXPECT_GT(outcomes_ok, 200u);
    EXPECT_GT(outcomes_error, 200u);
}

TEST(ChatTemplateRobustness, RandomTokenSoupsOnlyThrowUserError) {
    static const char* const kPieces[] = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "+", "for", "in", "if", "else", "elif",
                                          "endif", "endfor", "set", "macro", "endmacro", "call", "endcall", "filter",
                                          "endfilter", "x", "y", "ns", "namespace()", "loop", "(", ")", "[", "]", "{",
                                          "}", ",", ":", "=", "==", ".", "|", "~", "'a'", "\"b\"", "1", "2.5", "none",
                                          "true", "messages", "not", "and", "or", "is", "defined", "recursive", " ",
                                          "\n", "generation", "endgeneration", "raw", "endraw", "break", "continue"};
    std::mt19937_64 rng(7);
    for (int n = 0; n < 3000; ++n) {
        std::string s;
        const int len = 1 + static_cast<int>(rng() % 40);
        for (int k = 0; k < len; ++k) {
            s += kPieces[rng() % std::size(kPieces)];
            if (rng() % 3 == 0) s += ' ';
        }
        outcome(s);
    }
}

TEST(ChatTemplateRobustness, RunawayTemplatesStopAtTheirLimits) {
    struct Case {
        std::string source;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "(max_steps)"},
        {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nested deeper than 16 (max_depth)"},
        {"{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}", "(max_depth)"},
        {"{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "recursive loop deeper than 16 (max_depth)"},
        {"{% macro w() %}{% call w() %}{% endcall %}{{ caller }}{% endmacro %}{{ w() }}", "(max_depth)"},
        {"{% for i in range(5000) %}{{ 'x' * 1000 }}{% endfor %}", "(max_output_bytes)"},
        {"{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "(max_output_bytes)"},
        {"{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", "stopped at a limit"},
        {"{{ [0] * 100000000 }}", "(max_output_bytes)"},
        {"{{ 'ab'|center(100000000) }}", "stopped at a limit"},
        {"{{ 'a b'.replace(' ', 'x' * 60000) * 2 }}", "(max_output_bytes)"},
        {"{{ range(1000000000)|length }}", "Range too big"},
        {"{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}",
         "RecursionError: values nested deeper than 400 levels"},
        {"{% set ns = namespace(g=[1]) %}{% for i in range(1000) %}{% set ns.g = ns.g|select %}{% endfor %}{{ ns.g|list }}",
         "RecursionError: generators nested deeper than 400 levels"},
        {"{% set ns = namespace(n=none) %}{% for i in range(600) %}{% set ns.n = namespace(n=ns.n) %}{% endfor %}{{ ns.n }}",
         "RecursionError: namespaces nested deeper than 400 levels"},
        {"{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "nested deeper than 200 levels"},
        {"{{ 1" + [] {
             std::string s;
             for (int k = 0; k < 100000; ++k) s += " + 1";
             return s;
         }() + " }}",
         "expression nested deeper than 200 levels"},
        {[] {
             std::string s;
             for (int k = 0; k < 300; ++k) s += "{% if true %}";
             return s;
         }(),
         "nested deeper than 200 levels"},
        {"{{ 2 ** 64 }}", "OverflowError"},
    };
    for (const Case& c : cases) {
        const std::string e = outcome(c.source);
        EXPECT_NE(e.find("mutant"), std::string::npos) << c.source.substr(0, 200);
        EXPECT_NE(e.find(c.expected), std::string::npos) << c.source.substr(0, 200) << "\n -> " << e;
    }
}

TEST(ChatTemplateRobustness, SelfReferencesPrintAsPythonDoes) {
    ChatTemplateLimits l = small_limits();
    const ChatTemplateInput in = robustness_input();
    // dict repr's recursion guard: the inner namespace shows {...}.
    EXPECT_EQ(ChatTemplate::parse("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "t", l).render(in),
              "<Namespace {'me': <Namespace {...}>}>");
}

TEST(ChatTemplateRobustness, DefaultLimitsLeaveRoomForLongConversations) {
    // 2000 turns of 200 characters through a ChatML template: well inside the default limits.
    ChatTemplateInput in;
    in.messages = json::array();
    for (int k = 0; k < 2000; ++k)
        in.messages.push_back({{"role", k % 2 ? "assistant" : "user"}, {"content", std::string(200, 'a' + k % 26)}});
    const std::string out =
        ChatTemplate::parse("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor %}"
                            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
                            "chatml")
            .render(in);
    const size_t user_frame = std::string("<|im_start|>user\n<|im_end|>\n").size();
    const size_t assistant_frame = std::string("<|im_start|>assistant\n<|im_end|>\n").size();
    EXPECT_EQ(out.size(), 2000 * 200 + 1000 * (user_frame + assistant_frame) + std::string("<|im_start|>assistant\n").size());
}

}  // namespace
}  // namespace ql
