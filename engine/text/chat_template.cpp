// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/chat_template.h"

#include <clocale>
#include <locale.h>

#include <vector>

#include "engine/core/errors.h"
#include "engine/io/sha256.h"
#include "engine/io/utf8.h"
#include "engine/text/jinja_globals.h"
#include "engine/text/jinja_interpreter.h"
#include "engine/text/jinja_json.h"
#include "engine/text/jinja_optimizer.h"
#include "engine/text/jinja_parser.h"

namespace ql {

struct ChatTemplate::Impl {
    std::string source;
    std::string origin;
    std::string sha256;
    ChatTemplateLimits limits;
    jinja::Body body;
};

namespace {

// datetime.strftime for a naive datetime (CPython Modules/_datetimemodule.c wrap_strftime): %f is
// the microseconds, %z and %Z are empty; the rest is the C library's strftime in the "C" locale
// (Python never sets LC_TIME).
std::string chat_template_strftime(const std::tm& when, const std::string& format, size_t max_bytes) {
    std::string fmt;
    for (size_t k = 0; k < format.size(); ++k) {
        if (format[k] == '%' && k + 1 < format.size()) {
            const char c = format[k + 1];
            if (c == 'f') {
                fmt += "000000";
                ++k;
                continue;
            }
            if (c == 'z' || c == 'Z') {
                ++k;
                continue;
            }
            fmt += format[k];
            fmt += c;
            ++k;
            continue;
        }
        fmt += format[k];
    }
    if (fmt.empty()) return std::string();
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
    std::vector<char> buf(fmt.size() * 8 + 64);
    while (true) {
        const size_t n = strftime_l(buf.data(), buf.size(), fmt.c_str(), &when, c_locale);
        if (n > 0 || buf.size() > max_bytes) return std::string(buf.data(), n);
        buf.resize(buf.size() * 4);
    }
}

std::tm chat_template_now(const std::optional<std::tm>& now) {
    std::tm t{};
    if (now) {
        t = *now;
        // Fill the weekday and day of the year from the date.
        std::tm probe = t;
        probe.tm_isdst = 0;
        const std::time_t secs = timegm(&probe);
        std::tm norm{};
        gmtime_r(&secs, &norm);
        t.tm_wday = norm.tm_wday;
        t.tm_yday = norm.tm_yday;
        return t;
    }
    const std::time_t secs = std::time(nullptr);
    localtime_r(&secs, &t);
    return t;
}

[[noreturn]] void chat_template_input_error(const std::string& origin, const std::string& what) {
    throw UserError(origin + ": chat template input: " + what);
}

// transformers apply_chat_template drops the None-valued keys of each message, then
// render_jinja_template's _alias_reasoning_fields fills reasoning_content from thinking/reasoning
// and thinking from reasoning_content: {"thinking": r, **message, "reasoning_content": r}.
jinja::Value chat_template_message(const nlohmann::ordered_json& m, const std::string& origin, size_t index) {
    const std::string where = "messages[" + std::to_string(index) + "]";
    if (!m.is_object()) chat_template_input_error(origin, where + " is not a JSON object");
    std::vector<std::pair<jinja::Value, jinja::Value>> items;
    for (auto it = m.begin(); it != m.end(); ++it) {
        if (it.value().is_null()) continue;
        items.emplace_back(jinja::Value::string(it.key()), jinja::value_from_json(it.value(), where + "." + it.key()));
    }
    const jinja::Value* reasoning = nullptr;
    for (const char* field : {"reasoning_content", "thinking", "reasoning"}) {
        for (const auto& kv : items)
            if (kv.first.str() == field) {
                reasoning = &kv.second;
                break;
            }
        if (reasoning) break;
    }
    if (!reasoning) return jinja::Value::dict(std::move(items), true);
    const jinja::Value r = *reasoning;
    std::vector<std::pair<jinja::Value, jinja::Value>> aliased;
    aliased.emplace_back(jinja::Value::string("thinking"), r);
    for (auto& kv : items) {
        if (kv.first.str() == "thinking")
            aliased[0].second = kv.second;
        else
            aliased.push_back(kv);
    }
    bool replaced = false;
    for (auto& kv : aliased)
        if (kv.first.str() == "reasoning_content") {
            kv.second = r;
            replaced = true;
        }
    if (!replaced) aliased.emplace_back(jinja::Value::string("reasoning_content"), r);
    return jinja::Value::dict(std::move(aliased), true);
}

}  // namespace

ChatTemplate ChatTemplate::parse(const std::string& source, const std::string& origin, ChatTemplateLimits limits) {
    if (source.size() > kMaxSourceBytes)
        throw UserError(origin + ": chat template of " + std::to_string(source.size()) + " bytes is larger than the " +
                        std::to_string(kMaxSourceBytes) + " bytes allowed");
    if (const auto bad = first_invalid_utf8(source.data(), source.size()))
        throw UserError(origin + ": chat template is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
    if (limits.max_output_bytes == 0 || limits.max_steps <= 0 || limits.max_depth <= 0)
        throw UserError(origin + ": chat template limits must be positive");
    auto impl = std::make_shared<Impl>();
    impl->source = source;
    impl->origin = origin;
    impl->limits = limits;
    impl->sha256 = sha256_hex(source.data(), source.size());
    try {
        impl->body = jinja::parse_template(source);
    } catch (const jinja::SyntaxError& e) {
        throw UserError(origin + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) +
                        ": chat template syntax error: " + e.what());
    }
    jinja::Limits fold_limits;
    fold_limits.max_output_bytes = limits.max_output_bytes;
    fold_limits.max_steps = limits.max_steps;
    fold_limits.max_depth = limits.max_depth;
    jinja::fold_constants(impl->body, fold_limits);
    ChatTemplate t;
    t.impl_ = std::move(impl);
    return t;
}

std::string ChatTemplate::render(const ChatTemplateInput& input) const {
    const Impl& im = *impl_;
    std::unordered_map<std::string, jinja::Value> context;
    try {
        if (!input.messages.is_array()) chat_template_input_error(im.origin, "messages is not a JSON array");
        std::vector<jinja::Value> messages;
        for (size_t k = 0; k < input.messages.size(); ++k)
            messages.push_back(chat_template_message(input.messages[k], im.origin, k));
        context["messages"] = jinja::Value::list(std::move(messages));
        if (!input.tools.is_null() && !input.tools.is_array())
            chat_template_input_error(im.origin, "tools is neither null nor a JSON array");
        context["tools"] = input.tools.is_null() ? jinja::Value::none() : jinja::value_from_json(input.tools, "tools");
        context["documents"] = jinja::Value::none();
        context["add_generation_prompt"] = jinja::Value::boolean(input.add_generation_prompt);
        if (input.bos_token) context["bos_token"] = jinja::Value::string(*input.bos_token);
        if (input.eos_token) context["eos_token"] = jinja::Value::string(*input.eos_token);
        if (!input.extra.is_null()) {
            if (!input.extra.is_object()) chat_template_input_error(im.origin, "extra is neither null nor a JSON object");
            for (auto it = input.extra.begin(); it != input.extra.end(); ++it) {
                const std::string& key = it.key();
                if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt")
                    chat_template_input_error(im.origin, "extra variable '" + key + "' would replace a render argument");
                context[key] = jinja::value_from_json(it.value(), "extra." + key);
            }
        }
    } catch (const jinja::Error& e) {
        chat_template_input_error(im.origin, e.what());
    }
    const std::tm now = chat_template_now(input.now);
    const size_t max_bytes = im.limits.max_output_bytes;
    jinja::add_jinja_globals(context, [now, max_bytes](const std::string& fmt) { return chat_template_strftime(now, fmt, max_bytes); });

    jinja::Limits limits;
    limits.max_output_bytes = im.limits.max_output_bytes;
    limits.max_steps = im.limits.max_steps;
    limits.max_depth = im.limits.max_depth;
    jinja::Interpreter interpreter(limits);
    try {
        return interpreter.render(im.body, context);
    } catch (const jinja::Error& e) {
        const std::string where = im.origin + ": line " + std::to_string(interpreter.error_line()) + ": ";
        if (e.kind() == "TemplateError") throw UserError(where + "the chat template raised an error: " + e.what());
        if (e.kind() == "LimitError") throw UserError(where + "chat template stopped at a limit: " + e.what());
        if (e.kind() == "NotSupported") throw UserError(where + "chat template uses an unsupported feature: " + e.what());
        throw UserError(where + "chat template error: " + e.kind() + ": " + e.what());
    }
}

const std::string& ChatTemplate::sha256() const { return impl_->sha256; }
const std::string& ChatTemplate::origin() const { return impl_->origin; }
const std::string& ChatTemplate::source() const { return impl_->source; }

}  // namespace ql
