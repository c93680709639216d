// SPDX-License-Identifier: GPL-3.0-or-later
// QuantLab's Jinja engine for chat templates (engine/text/chat_template.h), construct by
// construct. The expected strings are what transformers' own environment renders for the same
// template and input (transformers.utils.chat_template_utils.render_jinja_template with Jinja2
// 3.1.6, the peers venv): they were computed there once and are written here as literals;
// tests/engine/chat_template_peer_test.cpp compares against the live peer on every real template.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "engine/core/errors.h"
#include "engine/text/chat_template.h"

namespace ql {
namespace {

using json = nlohmann::ordered_json;

ChatTemplateInput one_user_message() {
    ChatTemplateInput in;
    in.messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
    in.add_generation_prompt = false;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    std::tm now{};
    now.tm_year = 2025 - 1900;
    now.tm_mon = 6;
    now.tm_mday = 26;
    now.tm_hour = 14;
    now.tm_min = 30;
    now.tm_sec = 5;
    in.now = now;
    return in;
}

std::string render(const std::string& source, const ChatTemplateInput& in = one_user_message()) {
    return ChatTemplate::parse(source, "test.jinja").render(in);
}

// The UserError message of parsing and rendering `source`; fails the test when nothing is thrown.
std::string error_of(const std::string& source, const ChatTemplateInput& in = one_user_message(),
                     ChatTemplateLimits limits = {}) {
    try {
        ChatTemplate::parse(source, "test.jinja", limits).render(in);
    } catch (const UserError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no UserError for: " << source;
    return {};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The chat template of SmolLM2-135M-Instruct (ChatML with a default system prompt).
const char* const kSmolLm2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are "
    "a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + "
    "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' }}{% endif %}";

TEST(ChatTemplate, RendersSmolLm2ChatMlWithGenerationPrompt) {
    ChatTemplateInput in = one_user_message();
    in.messages = json::parse(R"([{"role": "user", "content": "What is 2+2?"}])");
    in.add_generation_prompt = true;
    EXPECT_EQ(render(kSmolLm2Template, in),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
              "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
    in.messages = json::parse(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                                  {"role": "assistant", "content": "Hello!"}])");
    in.add_generation_prompt = false;
    EXPECT_EQ(render(kSmolLm2Template, in),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n");
}

TEST(ChatTemplate, PreparesMessagesAsApplyChatTemplate) {
    // None-valued keys are dropped (apply_chat_template); reasoning is aliased as
    // {"thinking": r, **message, "reasoning_content": r} (_alias_reasoning_fields).
    ChatTemplateInput in = one_user_message();
    in.messages = json::parse(R"([{"role": "user", "content": null, "name": "x"},
                                  {"role": "assistant", "content": "4", "reasoning_content": "r"},
                                  {"role": "assistant", "thinking": "t", "content": "x"}])");
    EXPECT_EQ(render("{{ messages }}", in),
              "[{'role': 'user', 'name': 'x'}, {'thinking': 'r', 'role': 'assistant', 'content': '4', 'reasoning_content': "
              "'r'}, {'thinking': 't', 'role': 'assistant', 'content': 'x', 'reasoning_content': 't'}]");
}

TEST(ChatTemplate, PassesToolsSpecialTokensAndExtraVariables) {
    ChatTemplateInput in = one_user_message();
    in.extra = json::parse(R"({"enable_thinking": false, "eos_token": "<eos>"})");
    EXPECT_EQ(render("{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ bos_token }}|{{ eos_token }}|{{ enable_thinking }}", in),
              "None|None|False|<s>|<eos>|False");
    in.tools = json::parse(R"([{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}])");
    EXPECT_EQ(render("{{ tools|map(attribute='function.name')|join(',') }}", in), "a,b");
    in.bos_token.reset();
    EXPECT_EQ(render("[{{ bos_token }}]{{ bos_token is defined }}", in), "[]False");
    in.extra = json::parse(R"({"messages": []})");
    EXPECT_TRUE(has(error_of("x", in), "extra variable 'messages' would replace a render argument"));
}

TEST(ChatTemplate, RejectsMalformedInput) {
    ChatTemplateInput in = one_user_message();
    in.messages = json::parse(R"({"role": "user"})");
    EXPECT_TRUE(has(error_of("x", in), "test.jinja: chat template input: messages is not a JSON array"));
    in.messages = json::parse(R"(["just text"])");
    EXPECT_TRUE(has(error_of("x", in), "messages[0] is not a JSON object"));
    in = one_user_message();
    in.tools = json::parse(R"({"name": "f"})");
    EXPECT_TRUE(has(error_of("x", in), "tools is neither null nor a JSON array"));
}

TEST(ChatTemplate, HashesTheSourceAndRefusesInvalidUtf8) {
    const ChatTemplate t = ChatTemplate::parse("abc", "origin");
    EXPECT_EQ(t.sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // SHA-256("abc")
    EXPECT_EQ(t.origin(), "origin");
    try {
        ChatTemplate::parse(std::string("ok \xff"), "model.gguf: tokenizer.chat_template");
        FAIL() << "invalid UTF-8 accepted";
    } catch (const UserError& e) {
        EXPECT_EQ(std::string(e.what()), "model.gguf: tokenizer.chat_template: chat template is not valid UTF-8 (byte 3)");
    }
}

TEST(JinjaLanguage, TrimsAndStripsBlocksAsTransformersConfiguresJinja) {
    EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\ndone"), "yes\ndone");  // trim_blocks
    EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\nend"), "    x\nend");  // lstrip_blocks
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c|x {{- 'y' -}} z"), "abc|xyz");
    EXPECT_EQ(render("line\n    {%+ if true %}kept{% endif %}"), "line\n    kept");
    EXPECT_EQ(render("{% if true +%}\nnewline kept\n{% endif %}"), "\nnewline kept\n");
    EXPECT_EQ(render("a\n  {# comment #}\nb {#- gone -#} c"), "a\nbc");
    EXPECT_EQ(render("{{ 'v' }}\nnext"), "v\nnext");  // no trimming after }}
    EXPECT_EQ(render("text\n"), "text");              // keep_trailing_newline is off
    EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(JinjaLanguage, TemplateNewlinesAreNormalizedButInputIsNot) {
    // Lexer.tokeniter turns \r\n and \r into \n in the template (string literals included).
    EXPECT_EQ(render("a\r\n{% if true %}\r\nb\rc\r\n{% endif %}\r\n{{ 'x\r\ny' }}\r\n"), "a\nb\nc\nx\ny");
    ChatTemplateInput in = one_user_message();
    in.messages = json::parse(R"([{"role": "user", "content": "keep\r\nthis"}])");
    EXPECT_EQ(render("{{ messages[0].content }}", in), "keep\r\nthis");
}

TEST(JinjaLanguage, PrintsValuesAsPythonStr) {
    EXPECT_EQ(render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ 1e16 }}|{{ 0.00001 }}|{{ 1/3 }}|{{ [1, 'a', none] }}|{{ {'k': (1,)} }}|"
                     "{{ \"it's\" }}|{{ ['it\\'s'] }}"),
              "None|True|1.0|1e+16|1e-05|0.3333333333333333|[1, 'a', None]|{'k': (1,)}|it's|[\"it's\"]");
}

TEST(JinjaLanguage, ArithmeticAndLogicFollowPython) {
    EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 10 / 4 }} {{ 10 / 5 }} {{ true + 1 }} {{ 'ab' * 2 }} "
                     "{{ [1] + [2] }} {{ 'a' ~ 1 ~ none }}"),
              "3 -4 2 1024 2.5 2.0 2 abab [1, 2] a1None");
    EXPECT_EQ(render("{{ 0 or 'x' }}|{{ '' and 1 }}|{{ 1 < 2 < 3 }}|{{ 'b' in 'abc' }}|{{ 3 not in [1, 2] }}|{{ 'k' in {'k': 1} }}"),
              "x||True|True|True|True");
    EXPECT_TRUE(has(error_of("{{ 1 + 'a' }}"), "TypeError: unsupported operand type(s) for +: 'int' and 'str'"));
}

TEST(JinjaLanguage, StringMethodsCountCodePoints) {
    EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|"
                     "{{ 'a b c'.rsplit(' ', 1) }}|{{ 'Hello'.upper() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|"
                     "{{ 'abc'.startswith(('x', 'a')) }}|{{ 'a-b'.replace('-', '+') }}|{{ 'héllo'.find('l') }}|"
                     "{{ '{}:{}'.format(1, 'a') }}|{{ '%s=%d' % ('n', 5) }}"),
              "a b|a|['a', 'b', '', 'c']|['a', 'b']|['a b', 'c']|HELLO|Hello World|Hello|True|a+b|2|1:a|n=5");
    EXPECT_EQ(render("{% set s = 'héllo' %}{{ s[1] }}|{{ s[-1] }}|{{ s[1:3] }}|{{ s[::-1] }}|{{ s|length }}|"
                     "{% set l = [0, 1, 2, 3] %}{{ l[::-1] }}|{{ l[1:-1] }}|{{ l[::2] }}"),
              "é|o|él|olléh|5|[3, 2, 1, 0]|[1, 2]|[0, 2]");
}

TEST(JinjaLanguage, LoopsBindLoopAndScopeTheirAssignments) {
    EXPECT_EQ(render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
                     "{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
              "103TrueFalse3b;212FalseFalse3ac;321FalseTrue3b;");
    EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in range(6) if x is odd %}{{ x }}{% endfor %}|"
                     "{% for x in range(10) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
                     "{{ x }}{% endfor %}|{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}{{ v }}{% endfor %}"),
              "empty|135|023|a1b2");
    EXPECT_EQ(render("{% set x = 'outer' %}{% for i in [1, 2] %}{% set x = 'inner' %}{% endfor %}{{ x }}|"
                     "{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}|"
                     "{% if true %}{% set y = 'if leaks' %}{% endif %}{{ y }}"),
              "outer|6|if leaks");
    EXPECT_EQ(render("{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}{{ item.n }}[{{ loop(item.c) }}]"
                     "{% endfor %}"),
              "a[b[]]");
}

TEST(JinjaLanguage, MacrosTakeDefaultsKeywordsVarargsAndCaller) {
    EXPECT_EQ(render("{% macro m(a, b='B', c='C') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|"
                     "{{ m(a=0) }}"),
              "1BC|12C|1B3|0BC");
    EXPECT_EQ(render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, x=3) }}"), "1(2,){'x': 3}");
    EXPECT_EQ(render("{% macro wrap(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call wrap('b') %}bold{% endcall %}"),
              "<b>bold</b>");
    EXPECT_EQ(render("{% set b %}  text {{ 1 }}{% endset %}[{{ b }}]|{% filter upper %}up{% endfilter %}|"
                     "{% with a = 2 %}{{ a }}{% endwith %}"),
              "[  text 1]|UP|2");
}

TEST(JinjaLanguage, FiltersBehaveAsJinja2s) {
    EXPECT_EQ(render("{{ '  x  '|trim }}|{{ [1, 2]|length }}|{{ [3, 1, 2]|first }}|{{ [3, 1, 2]|last }}|{{ [1, 2]|join(', ') }}|"
                     "{{ u|default('d') }}|{{ ''|default('e', true) }}|{{ {'b': 1, 'a': 2}|items|list }}|{{ 'ab'|list }}|"
                     "{{ 5|string }}|{{ '42'|int }}|{{ '4.5'|float }}|{{ 'x'|int(7) }}"),
              "x|2|3|2|1, 2|d|e|[('b', 1), ('a', 2)]|['a', 'b']|5|42|4.5|7");
    EXPECT_EQ(render("{% set p = [{'n': 'a', 'k': 2}, {'n': 'b', 'k': 1}, {'n': 'c'}] %}"
                     "{{ p|selectattr('k')|map(attribute='n')|list }}|{{ p|rejectattr('k')|map(attribute='n')|list }}|"
                     "{{ p|map(attribute='k', default=0)|list }}|{{ [0, 1, 2]|select|list }}|{{ [1, 2, 3]|reject('odd')|list }}|"
                     "{{ [1, 2, 1]|unique|list }}|{{ [3, 1, 2]|sort }}|{{ p[:2]|sort(attribute='k')|map(attribute='n')|join }}|"
                     "{{ {'b': 1, 'a': 2}|dictsort }}"),
              "['a', 'b']|['c']|[2, 1, 0]|[1, 2]|[2]|[1, 2]|[1, 2, 3]|ba|[('a', 2), ('b', 1)]");
    EXPECT_EQ(render("{{ 'Hello'|capitalize }}|{{ 'hello world'|title }}|{{ 'A'|lower }}|{{ 'a'|upper }}|{{ 'a-b'|replace('-', '') }}|"
                     "{{ 2.675|round(2) }}|{{ 2.5|round }}|{{ -3|abs }}|{{ 'a\\nb'|indent(2) }}|{{ '<b>'|safe + '<i>' }}|"
                     "{{ [1, 2, 3]|sum }}|{{ [4, 1]|min }}|{{ [4, 1]|max }}|{{ 'abc'|reverse }}"),
              "Hello|Hello World|a|A|ab|2.67|2.0|3|a\n  b|<b>&lt;i&gt;|6|1|4|cba");
}

TEST(JinjaLanguage, TojsonIsTransformersJsonDumps) {
    EXPECT_EQ(render("{{ {'b': [1, 2.5, none, true], 'a': 'é\"'}|tojson }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|"
                     "{{ [1, {'x': 2}]|tojson(indent=2) }}|{{ {'k': 1}|tojson(separators=(',', ':')) }}|"
                     "{{ 'é'|tojson(ensure_ascii=true) }}"),
              "{\"b\": [1, 2.5, null, true], \"a\": \"é\\\"\"}|{\"a\": 2, \"b\": 1}|[\n  1,\n  {\n    \"x\": 2\n  }\n]|"
              "{\"k\":1}|\"\\u00e9\"");
}

TEST(JinjaLanguage, TestsBehaveAsJinja2s) {
    EXPECT_EQ(render("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }} {{ 1 is integer }} {{ 1.5 is float }} "
                     "{{ {} is mapping }} {{ [] is sequence }} {{ 'a' is iterable }} {{ true is boolean }} {{ 3 is odd }} "
                     "{{ 4 is even }} {{ 1 is equalto 1 }} {{ 2 is in [1, 2] }} {{ x is undefined }} {{ false is false }} "
                     "{{ 1 is true }}"),
              "False True True True True True True True True True True True True True True True False");
}

TEST(JinjaLanguage, UndefinedPrintsEmptyAndRaisesWhenUsed) {
    EXPECT_EQ(render("[{{ missing }}][{{ missing|length }}][{{ {'a': 1}.b }}][{{ {'a': 1}['b'] is defined }}]"
                     "[{% for x in missing %}x{% endfor %}]"),
              "[][0][][False][]");
    EXPECT_EQ(error_of("{{ missing.attribute }}"), "test.jinja: line 1: chat template error: UndefinedError: 'missing' is undefined");
}

TEST(JinjaLanguage, SandboxRefusesMutation) {
    EXPECT_EQ(error_of("{% set l = [] %}\n{{ l.append(1) }}"),
              "test.jinja: line 2: chat template error: SecurityError: access to attribute 'append' of 'list' object is unsafe.");
}

TEST(JinjaLanguage, RaiseExceptionCarriesTheTemplatesMessage) {
    EXPECT_EQ(error_of("{% if messages|length %}\n  {{ raise_exception('Only user and assistant roles are supported!') }}\n{% endif %}"),
              "test.jinja: line 2: the chat template raised an error: Only user and assistant roles are supported!");
}

TEST(JinjaLanguage, GenerationBlockRendersItsBody) {
    EXPECT_EQ(render("{% for m in messages %}{% generation %}<{{ m.role }}>{% endgeneration %}{% endfor %}"), "<user>");
}

TEST(JinjaLanguage, StrftimeNowFormatsTheGivenTime) {
    EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%dT%H:%M:%S') }}"), "26 Jul 2025|2025-07-26T14:30:05");
}

TEST(JinjaLanguage, SyntaxErrorsNameOriginLineAndColumn) {
    EXPECT_EQ(error_of("ok\n{{ 1 + }}"), "test.jinja:2:8: chat template syntax error: unexpected 'end of print statement'");
    EXPECT_EQ(error_of("{% if true %}\nunclosed"),
              "test.jinja:2:9: chat template syntax error: Unexpected end of template. Jinja was looking for the following "
              "tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.");
    EXPECT_EQ(error_of("a\n  {% frobnicate %}"), "test.jinja:2:6: chat template syntax error: Encountered unknown tag 'frobnicate'.");
    EXPECT_EQ(error_of("{{ 'é' ~ x|no_such_filter }}"), "test.jinja:1:12: chat template syntax error: No filter named 'no_such_filter'.");
    EXPECT_EQ(error_of("{% break %}"), "test.jinja:1:4: chat template syntax error: 'break' outside loop");
}

TEST(JinjaLanguage, UnknownFilterInsideIfFailsOnlyWhenEvaluated) {
    // jinja2/compiler.py: filters and tests inside {% if %} are looked up at run time.
    EXPECT_EQ(render("{% if false %}{{ 1|no_such_filter }}{% endif %}fine"), "fine");
    EXPECT_EQ(error_of("{% if true %}{{ 1|no_such_filter }}{% endif %}"),
              "test.jinja: line 1: chat template error: TemplateRuntimeError: No filter named 'no_such_filter' found.");
}

TEST(ChatTemplateLimits, StepsOutputAndDepthStopWithUserErrors) {
    ChatTemplateLimits small;
    small.max_steps = 5000;
    EXPECT_EQ(error_of("{% for i in range(100000) %}{{ i }}{% endfor %}", one_user_message(), small),
              "test.jinja: line 1: chat template stopped at a limit: more than 5000 evaluation steps (max_steps)");
    small = {};
    small.max_output_bytes = 1000;
    EXPECT_EQ(error_of("{% for i in range(1000) %}xx{% endfor %}", one_user_message(), small),
              "test.jinja: line 1: chat template stopped at a limit: output larger than 1000 bytes (max_output_bytes)");
    EXPECT_EQ(error_of("{{ 'x' * 5000 }}", one_user_message(), small),
              "test.jinja: line 1: chat template stopped at a limit: a repeated string would exceed the limit of 1000 bytes "
              "(max_output_bytes)");
    small = {};
    small.max_depth = 10;
    EXPECT_EQ(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}", one_user_message(), small),
              "test.jinja: line 1: chat template stopped at a limit: macro calls nested deeper than 10 (max_depth)");
}

}  // namespace
}  // namespace ql
