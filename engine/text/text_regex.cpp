// SPDX-License-Identifier: GPL-3.0-or-later
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/text/text_regex.h"

#include <pcre2.h>

#include <memory>
#include <stdexcept>

namespace ql::text {
namespace {

// Oniguruma's Unicode \w, the "word" class of UTS #18 Annex C: Alphabetic (letters and letter
// numbers; its other members are marks), Mark, Decimal_Number, Connector_Punctuation and the
// joiners. Other numbers such as '½' or '²' are not word characters (checked against the
// reference: tests/data/tokenizers/zoo-split-invert, case "numbers").
constexpr const char* kWordClass = "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200C}\\x{200D}";

// The White_Space property, which Oniguruma's and Rust's \s match; PCRE2's \s also matches
// U+180E, a format character since Unicode 6.3.
constexpr const char* kSpaceClass = "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

std::string error_text(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

// One JIT stack per thread: the default 32 KiB machine stack is too small for long runs of
// whitespace under patterns such as \s+(?!\S).
struct JitContext {
    pcre2_jit_stack* stack = nullptr;
    pcre2_match_context* context = nullptr;
    JitContext() {
        stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
        context = pcre2_match_context_create(nullptr);
        if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~JitContext() {
        if (context) pcre2_match_context_free(context);
        if (stack) pcre2_jit_stack_free(stack);
    }
};

pcre2_match_context* thread_match_context() {
    thread_local JitContext ctx;
    return ctx.context;
}

}  // namespace

std::string translate_oniguruma_pattern(const std::string& p) {
    // \W and \S inside a class stay as PCRE2 reads them (no tokenizer.json seen uses them).
    std::string out;
    out.reserve(p.size() + 16);
    bool in_class = false;
    size_t class_start = 0;  // index in p just after '[' or '[^'
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\' && i + 1 < p.size()) {
            const char e = p[i + 1];
            if (e == 'w' || e == 's') {
                const std::string cls = e == 'w' ? kWordClass : kSpaceClass;
                out += in_class ? cls : "[" + cls + "]";
            } else if ((e == 'W' || e == 'S') && !in_class) {
                out += "[^" + std::string(e == 'W' ? kWordClass : kSpaceClass) + "]";
            } else {
                out += c;
                out += e;
            }
            ++i;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            class_start = i + 1;
            continue;
        }
        if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
            const size_t end = p.find(":]", i + 2);
            if (end != std::string::npos) {
                out.append(p, i, end + 2 - i);
                i = end + 1;
                continue;
            }
        }
        if (in_class && c == ']' && i != class_start) in_class = false;
        out += c;
    }
    return out;
}

TextRegex::TextRegex(const std::string& pattern) : pattern_(pattern) {
    const std::string translated = translate_oniguruma_pattern(pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code) {
        throw std::invalid_argument("invalid regular expression '" + pattern + "': " + error_text(error) +
                                    " (at offset " + std::to_string(offset) + ")");
    }
    code_ = code;
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

TextRegex::~TextRegex() { pcre2_code_free(as_code(code_)); }

std::vector<std::pair<size_t, size_t>> TextRegex::find_all(std::string_view s) const {
    std::vector<std::pair<size_t, size_t>> out;
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(as_code(code_), nullptr), &pcre2_match_data_free);
    if (!md) throw std::bad_alloc();
    pcre2_match_context* mctx = jit_ ? thread_match_context() : nullptr;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t start = 0;
    while (start <= s.size()) {
        int rc = jit_ ? pcre2_jit_match(as_code(code_), subject, s.size(), start, 0, md.get(), mctx)
                      : pcre2_match(as_code(code_), subject, s.size(), start, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // pathological backtracking: the interpreter uses the heap
            rc = pcre2_match(as_code(code_), subject, s.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw std::runtime_error("regular expression '" + pattern_ + "' failed: " + error_text(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        const size_t b = ov[0], e = ov[1];
        out.emplace_back(b, e);
        if (e > b) {
            start = e;
        } else {  // empty match: step over one character
            if (e >= s.size()) break;
            size_t n = 1;
            while (e + n < s.size() && (static_cast<unsigned char>(s[e + n]) & 0xC0) == 0x80) ++n;
            start = e + n;
        }
    }
    return out;
}

}  // namespace ql::text
