// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_lexer.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

// The operators of jinja2/lexer.py `operators`, longest first as operator_re tries them.
const char* const kJinjaOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]",
                                       "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

bool jinja_is_digit(char c) { return c >= '0' && c <= '9'; }

class JinjaLexer {
public:
    explicit JinjaLexer(std::string_view source) {
        // Lexer.tokeniter: every \r\n, \r and \n becomes \n, and one trailing newline is dropped
        // (keep_trailing_newline=False).
        src_.reserve(source.size());
        for (size_t k = 0; k < source.size(); ++k) {
            if (source[k] == '\r') {
                src_ += '\n';
                if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
            } else {
                src_ += source[k];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();
        line_starts_.push_back(0);
        for (size_t k = 0; k < src_.size(); ++k)
            if (src_[k] == '\n') line_starts_.push_back(k + 1);
    }

    std::vector<Token> run() {
        while (pos_ < src_.size()) root();
        Token eof;
        eof.type = TokenType::Eof;
        locate(src_.size(), eof);
        tokens_.push_back(eof);
        return std::move(tokens_);
    }

private:
    [[noreturn]] void fail(size_t at, const std::string& message) {
        Token t;
        locate(at, t);
        throw SyntaxError(t.line, t.column, message);
    }

    // Line and column (in code points) of byte `at`. Tokens come left to right, so the column is
    // counted on from the previous position (linear in the source, even on one long line).
    void locate(size_t at, Token& t) {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
        const size_t line_start = *(it - 1);
        t.line = static_cast<int>(it - line_starts_.begin());
        if (at < cursor_pos_ || line_start > cursor_pos_) {
            cursor_pos_ = line_start;
            cursor_col_ = 1;
        }
        cursor_col_ += static_cast<int>(code_point_count(std::string_view(src_).substr(cursor_pos_, at - cursor_pos_)));
        cursor_pos_ = at;
        t.column = cursor_col_;
    }

    // The code point at `at` and its byte length.
    char32_t code_point(size_t at, size_t& len) const {
        const auto b0 = static_cast<unsigned char>(src_[at]);
        len = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
        len = std::min(len, src_.size() - at);
        return decode_utf8(std::string_view(src_).substr(at, len))[0];
    }

    size_t skip_space(size_t at) const {
        while (at < src_.size()) {
            size_t len;
            if (!py_isspace(code_point(at, len))) break;
            at += len;
        }
        return at;
    }

    bool starts(size_t at, std::string_view what) const { return src_.compare(at, what.size(), what) == 0; }

    void emit(TokenType type, size_t at, std::string value = {}) {
        Token t;
        t.type = type;
        t.value = std::move(value);
        locate(at, t);
        tokens_.push_back(std::move(t));
    }

    // Data before a tag, with the tag's whitespace control applied (the OptionalLStrip branch of
    // Lexer.tokeniter). `variable`: lstrip_blocks does not apply to {{.
    void emit_data(size_t begin, size_t end, char sign, bool variable) {
        std::string_view text = std::string_view(src_).substr(begin, end - begin);
        if (sign == '-') {
            // text.rstrip(): all trailing (Unicode) whitespace.
            size_t e = text.size();
            while (e > 0) {
                size_t b = e - 1;
                while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
                if (!py_isspace(decode_utf8(text.substr(b, e - b))[0])) break;
                e = b;
            }
            text = text.substr(0, e);
        } else if (sign != '+' && !variable) {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if (l_pos > 0 || line_starting_) {
                const size_t rest = l_pos + begin;
                if (rest < end && skip_space(rest) >= end) text = text.substr(0, l_pos);
            }
        }
        if (!text.empty()) emit(TokenType::Data, begin, std::string(text));
    }

    void root() {
        size_t i = pos_;
        while (true) {
            i = src_.find('{', i);
            if (i == std::string::npos || i + 1 >= src_.size()) {
                emit(TokenType::Data, pos_, src_.substr(pos_));
                line_starting_ = src_.back() == '\n';
                pos_ = src_.size();
                return;
            }
            const char kind = src_[i + 1];
            if (kind == '{' || kind == '%' || kind == '#') break;
            ++i;
        }
        const char kind = src_[i + 1];
        size_t after = i + 2;
        char sign = 0;
        if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
        if (kind == '%') {
            size_t raw_end = 0;
            if (raw_begin(after, raw_end)) {
                emit_data(pos_, i, sign, false);
                line_starting_ = src_[raw_end - 1] == '\n';
                raw_body(raw_end);
                return;
            }
        }
        emit_data(pos_, i, sign, kind == '{');
        line_starting_ = false;
        if (kind == '#') {
            comment(after);
            return;
        }
        emit(kind == '%' ? TokenType::BlockBegin : TokenType::VariableBegin, i);
        pos_ = after;
        tag(kind == '%');
    }

    // root_raw_re after the "{%" and sign: \s*raw\s*(?:\-%}\s*|%})
    bool raw_begin(size_t at, size_t& end) const {
        size_t k = skip_space(at);
        if (!starts(k, "raw")) return false;
        k = skip_space(k + 3);
        if (starts(k, "-%}")) {
            end = skip_space(k + 3);
            return true;
        }
        if (starts(k, "%}")) {
            end = k + 2;
            return true;
        }
        return false;
    }

    void raw_body(size_t at) {
        // (.*?)((?:{%(\-|\+|))\s*endraw\s*(?:\+%}|\-%}\s*|%}\n?))
        for (size_t i = src_.find("{%", at); i != std::string::npos; i = src_.find("{%", i + 1)) {
            size_t k = i + 2;
            char sign = 0;
            if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) sign = src_[k++];
            k = skip_space(k);
            if (!starts(k, "endraw")) continue;
            k = skip_space(k + 6);
            size_t end;
            if (starts(k, "+%}")) {
                end = k + 3;
            } else if (starts(k, "-%}")) {
                end = skip_space(k + 3);
            } else if (starts(k, "%}")) {
                end = k + 2;
                if (end < src_.size() && src_[end] == '\n') ++end;
            } else {
                continue;
            }
            pos_ = at;
            emit_data(at, i, sign, false);
            line_starting_ = src_[end - 1] == '\n';
            pos_ = end;
            return;
        }
        fail(at, "Missing end of raw directive");
    }

    void comment(size_t at) {
        // (.*?)((?:\+#}|\-#}\s*|#}\n?))
        const size_t k = src_.find("#}", at);
        if (k == std::string::npos) fail(at, "Missing end of comment tag");
        size_t end;
        if (k > at && src_[k - 1] == '-') {
            end = skip_space(k + 2);
        } else if (k > at && src_[k - 1] == '+') {
            end = k + 2;
        } else {
            end = k + 2;
            if (end < src_.size() && src_[end] == '\n') ++end;
        }
        line_starting_ = src_[end - 1] == '\n';
        pos_ = end;
    }

    // (\d+_)*\d+ from `at`; returns the end or `at` when there is none.
    size_t digits(size_t at) const {
        size_t k = at;
        if (k >= src_.size() || !jinja_is_digit(src_[k])) return at;
        while (k < src_.size() && jinja_is_digit(src_[k])) ++k;
        while (k + 1 < src_.size() && src_[k] == '_' && jinja_is_digit(src_[k + 1])) {
            ++k;
            while (k < src_.size() && jinja_is_digit(src_[k])) ++k;
        }
        return k;
    }

    // float_re: digits, then a fraction and/or an exponent.
    size_t float_literal(size_t at) const {
        if (at > 0 && src_[at - 1] == '.') return at;
        const size_t int_end = digits(at);
        if (int_end == at) return at;
        size_t k = int_end;
        bool fraction = false;
        if (k < src_.size() && src_[k] == '.') {
            const size_t f = digits(k + 1);
            if (f > k + 1) {
                k = f;
                fraction = true;
            }
        }
        if (k < src_.size() && (src_[k] == 'e' || src_[k] == 'E')) {
            size_t e = k + 1;
            if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
            const size_t d = digits(e);
            if (d > e) return d;
        }
        return fraction ? k : at;
    }

    // integer_re: 0b/0o/0x forms, [1-9](_?\d)*, 0(_?0)*.
    size_t integer_literal(size_t at) const {
        if (at >= src_.size() || !jinja_is_digit(src_[at])) return at;
        auto run = [&](size_t k, auto ok) {
            const size_t start = k;
            while (true) {
                if (k < src_.size() && ok(src_[k])) {
                    ++k;
                } else if (k + 1 < src_.size() && src_[k] == '_' && ok(src_[k + 1])) {
                    k += 2;
                } else {
                    break;
                }
            }
            return k == start ? std::string::npos : k;
        };
        if (src_[at] == '0' && at + 1 < src_.size()) {
            const char p = static_cast<char>(src_[at + 1] | 0x20);
            size_t e = std::string::npos;
            if (p == 'b') e = run(at + 2, [](char c) { return c == '0' || c == '1'; });
            if (p == 'o') e = run(at + 2, [](char c) { return c >= '0' && c <= '7'; });
            if (p == 'x')
                e = run(at + 2, [](char c) {
                    return jinja_is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
                });
            if (e != std::string::npos) return e;
        }
        if (src_[at] == '0') {
            const size_t e = run(at + 1, [](char c) { return c == '0'; });
            return e == std::string::npos ? at + 1 : e;
        }
        const size_t e = run(at + 1, jinja_is_digit);
        return e == std::string::npos ? at + 1 : e;
    }

    bool name_char(size_t at, size_t& len) const {
        const char32_t c = code_point(at, len);
        if (c < 0x80) return jinja_is_digit(static_cast<char>(c)) || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        return py_isalpha(c) || py_isnumeric(c);
    }

    void tag(bool block) {
        std::vector<char> balance;
        while (true) {
            if (pos_ >= src_.size()) return;  // the parser reports the unexpected end
            if (balance.empty()) {
                size_t end = 0;
                if (block) {
                    if (starts(pos_, "+%}")) {
                        end = pos_ + 3;
                    } else if (starts(pos_, "-%}")) {
                        end = skip_space(pos_ + 3);
                    } else if (starts(pos_, "%}")) {
                        end = pos_ + 2;
                        if (end < src_.size() && src_[end] == '\n') ++end;
                    }
                } else {
                    if (starts(pos_, "-}}"))
                        end = skip_space(pos_ + 3);
                    else if (starts(pos_, "}}"))
                        end = pos_ + 2;
                }
                if (end) {
                    emit(block ? TokenType::BlockEnd : TokenType::VariableEnd, pos_);
                    line_starting_ = src_[end - 1] == '\n';
                    pos_ = end;
                    return;
                }
            }
            size_t len;
            if (py_isspace(code_point(pos_, len))) {
                pos_ = skip_space(pos_);
                continue;
            }
            if (const size_t e = float_literal(pos_); e > pos_) {
                std::string text;
                for (size_t k = pos_; k < e; ++k)
                    if (src_[k] != '_') text += src_[k];
                Token t;
                t.type = TokenType::Float;
                locate(pos_, t);
                const auto r = std::from_chars(text.data(), text.data() + text.size(), t.float_value);
                if (r.ec == std::errc::result_out_of_range) {
                    const size_t ep = text.find_first_of("eE");
                    const bool tiny = ep != std::string::npos && text[ep + 1] == '-';
                    t.float_value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
                }
                tokens_.push_back(t);
                pos_ = e;
                continue;
            }
            if (const size_t e = integer_literal(pos_); e > pos_) {
                Token t;
                t.type = TokenType::Integer;
                locate(pos_, t);
                std::string text;
                for (size_t k = pos_; k < e; ++k)
                    if (src_[k] != '_') text += src_[k];
                int base = 10;
                size_t skip = 0;
                if (text.size() > 1 && text[0] == '0') {
                    const char p = static_cast<char>(text[1] | 0x20);
                    if (p == 'b') base = 2, skip = 2;
                    if (p == 'o') base = 8, skip = 2;
                    if (p == 'x') base = 16, skip = 2;
                }
                const auto r = std::from_chars(text.data() + skip, text.data() + text.size(), t.int_value, base);
                if (r.ec != std::errc()) fail(pos_, "integer literal " + text + " does not fit in 64 bits");
                tokens_.push_back(t);
                pos_ = e;
                continue;
            }
            if (name_char(pos_, len)) {
                size_t e = pos_;
                while (e < src_.size() && name_char(e, len)) e += len;
                emit(TokenType::Name, pos_, src_.substr(pos_, e - pos_));
                pos_ = e;
                continue;
            }
            if (src_[pos_] == '\'' || src_[pos_] == '"') {
                const char q = src_[pos_];
                size_t k = pos_ + 1;
                while (k < src_.size() && src_[k] != q) k += src_[k] == '\\' ? 2 : 1;
                if (k < src_.size()) {
                    Token t;
                    t.type = TokenType::String;
                    locate(pos_, t);
                    t.value = unescape(pos_, src_.substr(pos_ + 1, k - pos_ - 1));
                    tokens_.push_back(std::move(t));
                    pos_ = k + 1;
                    continue;
                }
            }
            bool matched = false;
            for (const char* op : kJinjaOperators) {
                if (!starts(pos_, op)) continue;
                const std::string o = op;
                if (o == "{" || o == "(" || o == "[") {
                    balance.push_back(o == "{" ? '}' : o == "(" ? ')' : ']');
                } else if (o == "}" || o == ")" || o == "]") {
                    if (balance.empty()) fail(pos_, "unexpected '" + o + "'");
                    const char expected = balance.back();
                    balance.pop_back();
                    if (expected != o[0]) fail(pos_, "unexpected '" + o + "', expected '" + std::string(1, expected) + "'");
                }
                emit(TokenType::Operator, pos_, o);
                pos_ += o.size();
                matched = true;
                break;
            }
            if (!matched) {
                code_point(pos_, len);
                fail(pos_, "unexpected char " + py_str_repr(src_.substr(pos_, len)));
            }
        }
    }

    // Lexer.wrap: value.encode("ascii", "backslashreplace").decode("unicode-escape").
    std::string unescape(size_t at, const std::string& raw) {
        std::string ascii;
        char buf[16];
        for (char32_t c : decode_utf8(raw)) {
            if (c < 0x80) {
                ascii += static_cast<char>(c);
            } else {
                std::snprintf(buf, sizeof buf, c <= 0xFF ? "\\x%02x" : c <= 0xFFFF ? "\\u%04x" : "\\U%08x",
                              static_cast<unsigned>(c));
                ascii += buf;
            }
        }
        std::string out;
        auto hex = [&](size_t k, size_t n, const char* what) {
            uint32_t v = 0;
            for (size_t d = 0; d < n; ++d) {
                const char c = k + d < ascii.size() ? ascii[k + d] : '\0';
                int x = -1;
                if (jinja_is_digit(c)) x = c - '0';
                else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') x = (c | 0x20) - 'a' + 10;
                if (x < 0) fail(at, std::string("truncated ") + what + " escape");
                v = v * 16 + static_cast<uint32_t>(x);
            }
            return v;
        };
        auto put = [&](uint32_t cp) {
            if (cp > 0x10FFFF) fail(at, "illegal Unicode character");
            if (cp >= 0xD800 && cp <= 0xDFFF) fail(at, "surrogate code points in string literals are not supported");
            append_code_point(out, cp);
        };
        for (size_t k = 0; k < ascii.size(); ++k) {
            if (ascii[k] != '\\') {
                out += ascii[k];
                continue;
            }
            if (k + 1 >= ascii.size()) fail(at, "\\ at end of string");
            const char e = ascii[++k];
            switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x': put(hex(k + 1, 2, "\\xXX")); k += 2; break;
            case 'u': put(hex(k + 1, 4, "\\uXXXX")); k += 4; break;
            case 'U': put(hex(k + 1, 8, "\\UXXXXXXXX")); k += 8; break;
            case 'N': fail(at, "\\N{...} escapes are not supported");
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t v = static_cast<uint32_t>(e - '0');
                    for (int d = 0; d < 2 && k + 1 < ascii.size() && ascii[k + 1] >= '0' && ascii[k + 1] <= '7'; ++d)
                        v = v * 8 + static_cast<uint32_t>(ascii[++k] - '0');
                    put(v);
                } else {
                    out += '\\';  // unknown escapes stay as written
                    out += e;
                }
            }
        }
        return out;
    }

    std::string src_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    size_t cursor_pos_ = 0;
    int cursor_col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return JinjaLexer(source).run(); }

}  // namespace ql::jinja
