// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_text.h"

#include "engine/text/jinja_special_casing.h"
#include "engine/text/unicode_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace ql::jinja {

std::u32string decode_utf8(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<unsigned char>(s[i]);
        char32_t c;
        size_t n;
        if (b0 < 0x80) {
            c = b0;
            n = 1;
        } else if (b0 < 0xE0) {
            c = b0 & 0x1Fu;
            n = 2;
        } else if (b0 < 0xF0) {
            c = b0 & 0x0Fu;
            n = 3;
        } else {
            c = b0 & 0x07u;
            n = 4;
        }
        for (size_t k = 1; k < n && i + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
        out.push_back(c);
        i += n;
    }
    return out;
}

void append_code_point(std::string& out, char32_t c) { text::append_utf8(out, c); }

std::string encode_utf8(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_code_point(out, c);
    return out;
}

int64_t code_point_count(std::string_view s) {
    int64_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

bool py_isspace(char32_t c) {
    // CPython Objects/unicodetype_db.h, _PyUnicode_IsWhitespace.
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

utf8proc_category_t jinja_text_category(char32_t c) {
    if (c > 0x10FFFF) return UTF8PROC_CATEGORY_CN;
    return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

bool py_isprintable(char32_t c) {
    if (c == ' ') return true;
    if (c < 0x20 || c == 0x7F) return false;
    if (c < 0x7F) return true;
    switch (jinja_text_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

bool py_isalpha(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const auto k = jinja_text_category(c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}

bool py_isdigit(char32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return jinja_text_category(c) == UTF8PROC_CATEGORY_ND;
}

bool py_isnumeric(char32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    const auto k = jinja_text_category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool py_isupper_char(char32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z';
    return jinja_text_category(c) == UTF8PROC_CATEGORY_LU;
}

bool py_istitle_char(char32_t c) { return c >= 0x80 && jinja_text_category(c) == UTF8PROC_CATEGORY_LT; }

bool py_islower_char(char32_t c) {
    if (c < 0x80) return c >= 'a' && c <= 'z';
    return jinja_text_category(c) == UTF8PROC_CATEGORY_LL;
}

bool py_iscased(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const auto k = jinja_text_category(c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

namespace {

// Looks `c` up in a SpecialCasing table (sorted by code point); appends the mapping when found.
template <size_t N>
bool jinja_text_special(std::string& out, char32_t c, const JinjaSpecialCase (&table)[N]) {
    const auto* it = std::lower_bound(std::begin(table), std::end(table), c,
                                      [](const JinjaSpecialCase& e, char32_t x) { return e.from < x; });
    if (it == std::end(table) || it->from != c) return false;
    for (char32_t m : it->to)
        if (m) append_code_point(out, m);
    return true;
}

void jinja_text_append_upper(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    } else if (!jinja_text_special(out, c, kJinjaSpecialUpper)) {
        append_code_point(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
    }
}

void jinja_text_append_title(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    } else if (!jinja_text_special(out, c, kJinjaSpecialTitle)) {
        append_code_point(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
    }
}

// Case-ignorable (Unicode's Case_Ignorable: Mn Me Cf Lm Sk and the Word_Break MidLetter,
// MidNumLet and Single_Quote characters), for the final sigma rule.
bool jinja_text_case_ignorable(char32_t c) {
    switch (c) {
    case 0x27: case 0x2E: case 0x3A: case 0x5E: case 0x60: case 0xA8: case 0xAD: case 0xAF: case 0xB4: case 0xB7:
    case 0xB8: case 0x387: case 0x5F4: case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52:
    case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A:
        return true;
    default: break;
    }
    if (c < 0x80) return false;
    const auto k = jinja_text_category(c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK;
}

// Lower-cases u[i] as CPython's lower_ucs4: capital sigma becomes final sigma (U+03C2) after a
// cased letter when no cased letter follows (handle_capital_sigma), İ becomes i + U+0307.
void jinja_text_append_lower_at(std::string& out, const std::u32string& u, size_t i) {
    const char32_t c = u[i];
    if (c < 0x80) {
        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
        return;
    }
    if (c == 0x3A3) {
        size_t j = i;
        char32_t before = 0;
        while (j > 0) {
            before = u[--j];
            if (!jinja_text_case_ignorable(before)) break;
            before = 0;
        }
        bool final_sigma = before != 0 && py_iscased(before);
        if (final_sigma) {
            for (size_t k = i + 1; k < u.size(); ++k) {
                if (jinja_text_case_ignorable(u[k])) continue;
                final_sigma = !py_iscased(u[k]);
                break;
            }
        }
        append_code_point(out, final_sigma ? 0x3C2 : 0x3C3);
        return;
    }
    if (!jinja_text_special(out, c, kJinjaSpecialLower))
        append_code_point(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

bool jinja_text_in(const std::u32string& set, char32_t c) { return set.find(c) != std::u32string::npos; }

}  // namespace

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::u32string u = decode_utf8(s);
    const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
    auto strip_it = [&](char32_t c) { return chars ? jinja_text_in(set, c) : py_isspace(c); };
    size_t b = 0, e = u.size();
    if (left)
        while (b < e && strip_it(u[b])) ++b;
    if (right)
        while (e > b && strip_it(u[e - 1])) --e;
    return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
    if (sep) {
        if (sep->empty()) throw std::invalid_argument("empty separator");
        size_t pos = 0;
        while (maxsplit-- > 0) {
            const size_t hit = s.find(*sep, pos);
            if (hit == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, hit - pos));
            pos = hit + sep->size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    // CPython Objects/stringlib/split.h, split_whitespace.
    const std::u32string u = decode_utf8(s);
    size_t i = 0;
    const size_t n = u.size();
    while (maxsplit-- > 0) {
        while (i < n && py_isspace(u[i])) ++i;
        if (i == n) break;
        const size_t j = i;
        ++i;
        while (i < n && !py_isspace(u[i])) ++i;
        out.push_back(encode_utf8(std::u32string_view(u).substr(j, i - j)));
    }
    if (i < n) {
        while (i < n && py_isspace(u[i])) ++i;
        if (i != n) out.push_back(encode_utf8(std::u32string_view(u).substr(i)));
    }
    return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
    if (sep) {
        if (sep->empty()) throw std::invalid_argument("empty separator");
        size_t end = s.size();
        while (maxsplit-- > 0) {
            if (end < sep->size()) break;
            const size_t hit = s.rfind(*sep, end - sep->size());
            if (hit == std::string_view::npos) break;
            out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
            end = hit;
        }
        out.emplace_back(s.substr(0, end));
        std::reverse(out.begin(), out.end());
        return out;
    }
    // CPython Objects/stringlib/split.h, rsplit_whitespace.
    const std::u32string u = decode_utf8(s);
    int64_t i = static_cast<int64_t>(u.size()) - 1;
    while (maxsplit-- > 0) {
        while (i >= 0 && py_isspace(u[static_cast<size_t>(i)])) --i;
        if (i < 0) break;
        const int64_t j = i;
        --i;
        while (i >= 0 && !py_isspace(u[static_cast<size_t>(i)])) --i;
        out.push_back(encode_utf8(std::u32string_view(u).substr(static_cast<size_t>(i + 1), static_cast<size_t>(j - i))));
    }
    if (i >= 0) {
        while (i >= 0 && py_isspace(u[static_cast<size_t>(i)])) --i;
        if (i >= 0) out.push_back(encode_utf8(std::u32string_view(u).substr(0, static_cast<size_t>(i + 1))));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
    // CPython str.splitlines line boundaries.
    auto is_break = [](char32_t c) {
        return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
               c == 0x2028 || c == 0x2029;
    };
    const std::u32string u = decode_utf8(s);
    std::vector<std::string> out;
    size_t i = 0;
    while (i < u.size()) {
        size_t j = i;
        while (j < u.size() && !is_break(u[j])) ++j;
        size_t eol = j;
        if (j < u.size()) {
            eol = (u[j] == '\r' && j + 1 < u.size() && u[j + 1] == '\n') ? j + 2 : j + 1;
        }
        out.push_back(encode_utf8(std::u32string_view(u).substr(i, (keepends ? eol : j) - i)));
        i = eol;
    }
    return out;
}

std::string py_upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : decode_utf8(s)) jinja_text_append_upper(out, c);
    return out;
}

std::string py_lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const std::u32string u = decode_utf8(s);
    for (size_t i = 0; i < u.size(); ++i) jinja_text_append_lower_at(out, u, i);
    return out;
}

std::string py_casefold(std::string_view s) {
    // Full case folding (utf8proc's UTF8PROC_CASEFOLD), as str.casefold.
    utf8proc_uint8_t* folded = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                                &folded, static_cast<utf8proc_option_t>(UTF8PROC_CASEFOLD));
    if (n < 0) return py_lower(s);
    std::string out(reinterpret_cast<char*>(folded), static_cast<size_t>(n));
    std::free(folded);
    return out;
}

std::string py_swapcase(std::string_view s) {
    std::string out;
    const std::u32string u = decode_utf8(s);
    for (size_t i = 0; i < u.size(); ++i) {
        if (py_isupper_char(u[i]))
            jinja_text_append_lower_at(out, u, i);
        else if (py_islower_char(u[i]))
            jinja_text_append_upper(out, u[i]);
        else
            append_code_point(out, u[i]);
    }
    return out;
}

std::string py_capitalize(std::string_view s) {
    // CPython 3.8+ do_capitalize: title case for the first code point, lower case for the rest.
    std::string out;
    const std::u32string u = decode_utf8(s);
    for (size_t i = 0; i < u.size(); ++i) {
        if (i == 0)
            jinja_text_append_title(out, u[i]);
        else
            jinja_text_append_lower_at(out, u, i);
    }
    return out;
}

std::string py_title(std::string_view s) {
    // CPython do_title: a cased code point after a cased one is lowered, else title-cased.
    std::string out;
    bool previous_is_cased = false;
    const std::u32string u = decode_utf8(s);
    for (size_t i = 0; i < u.size(); ++i) {
        if (previous_is_cased)
            jinja_text_append_lower_at(out, u, i);
        else
            jinja_text_append_title(out, u[i]);
        previous_is_cased = py_iscased(u[i]);
    }
    return out;
}

std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count) {
    if (count < 0) count = std::numeric_limits<int64_t>::max();
    std::string out;
    if (old_text.empty()) {
        // "abc".replace("", "-") == "-a-b-c-": the new text goes before every code point and at the end.
        size_t i = 0;
        while (i < s.size() && count > 0) {
            out += new_text;
            --count;
            size_t n = 1;
            while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
            out += s.substr(i, n);
            i += n;
        }
        if (i < s.size()) {
            out += s.substr(i);
        } else if (count > 0) {
            out += new_text;
        }
        return out;
    }
    size_t pos = 0;
    while (count > 0) {
        const size_t hit = s.find(old_text, pos);
        if (hit == std::string_view::npos) break;
        out += s.substr(pos, hit - pos);
        out += new_text;
        pos = hit + old_text.size();
        --count;
    }
    out += s.substr(pos);
    return out;
}

int64_t py_find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse) {
    const std::u32string u = decode_utf8(s);
    const std::u32string v = decode_utf8(sub);
    const auto n = static_cast<int64_t>(u.size());
    start = std::max<int64_t>(0, std::min(start, n));
    end = std::max<int64_t>(0, std::min(end, n));
    const auto m = static_cast<int64_t>(v.size());
    if (end - start < m) return -1;
    if (!reverse) {
        for (int64_t i = start; i + m <= end; ++i)
            if (u.compare(static_cast<size_t>(i), static_cast<size_t>(m), v) == 0) return i;
    } else {
        for (int64_t i = end - m; i >= start; --i)
            if (u.compare(static_cast<size_t>(i), static_cast<size_t>(m), v) == 0) return i;
    }
    return -1;
}

int64_t py_count(std::string_view s, std::string_view sub, int64_t start, int64_t end) {
    const std::u32string u = decode_utf8(s);
    const std::u32string v = decode_utf8(sub);
    const auto n = static_cast<int64_t>(u.size());
    start = std::max<int64_t>(0, std::min(start, n));
    end = std::max<int64_t>(0, std::min(end, n));
    if (end < start) return 0;
    if (v.empty()) return end - start + 1;
    int64_t count = 0;
    const auto m = static_cast<int64_t>(v.size());
    for (int64_t i = start; i + m <= end;) {
        if (u.compare(static_cast<size_t>(i), static_cast<size_t>(m), v) == 0) {
            ++count;
            i += m;
        } else {
            ++i;
        }
    }
    return count;
}

std::string py_pad(std::string_view s, int64_t width, char32_t fill, int align) {
    const int64_t len = code_point_count(s);
    if (width <= len) return std::string(s);
    const int64_t marg = width - len;
    int64_t left = 0;
    if (align == 0)
        left = marg / 2 + (marg & width & 1);  // CPython pad() for str.center
    else if (align > 0)
        left = marg;
    std::string fill_text;
    append_code_point(fill_text, fill);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill_text;
    out += s;
    for (int64_t i = 0; i < marg - left; ++i) out += fill_text;
    return out;
}

std::string py_zfill(std::string_view s, int64_t width) {
    const int64_t len = code_point_count(s);
    if (width <= len) return std::string(s);
    std::string out(static_cast<size_t>(width - len), '0');
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) return std::string(1, s[0]) + out + std::string(s.substr(1));
    return out + std::string(s);
}

std::string py_str_repr(std::string_view s) {
    // CPython unicode_repr: single quotes unless the text has ' and no ".
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    char buf[16];
    for (char32_t c : decode_utf8(s)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < ' ' || c == 0x7F) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else if (c < 0x7F) {
            out += static_cast<char>(c);
        } else if (py_isprintable(c)) {
            append_code_point(out, c);
        } else if (c <= 0xFF) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else if (c <= 0xFFFF) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
            out += buf;
        }
    }
    out += quote;
    return out;
}

std::string py_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    // Shortest round-trip digits (std::to_chars, as CPython's dtoa mode 0), laid out by
    // PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0): fixed for -4 <= exponent < 16.
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t epos = sci.find('e');
    std::string digits = sci.substr(0, epos);
    const int exponent = std::stoi(sci.substr(epos + 1));
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int decpt = exponent + 1;  // position of the decimal point after the first digit
    const auto ndigits = static_cast<int>(digits.size());
    std::string out = sign;
    if (decpt <= -4 || decpt > 16) {
        out += digits[0];
        if (ndigits > 1) {
            out += '.';
            out += digits.substr(1);
        }
        char ebuf[16];
        std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += ebuf;
    } else if (decpt <= 0) {
        out += "0.";
        out += std::string(static_cast<size_t>(-decpt), '0');
        out += digits;
    } else if (decpt >= ndigits) {
        out += digits;
        out += std::string(static_cast<size_t>(decpt - ndigits), '0');
        out += ".0";
    } else {
        out += digits.substr(0, static_cast<size_t>(decpt));
        out += '.';
        out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
}

namespace {

std::string_view jinja_text_trim_ws(std::string_view t) {
    // Python's int()/float() strip Unicode whitespace; decode only the ends.
    while (!t.empty()) {
        size_t n = 1;
        while (n < t.size() && (static_cast<unsigned char>(t[n]) & 0xC0) == 0x80) ++n;
        if (!py_isspace(decode_utf8(t.substr(0, n))[0])) break;
        t.remove_prefix(n);
    }
    while (!t.empty()) {
        size_t b = t.size() - 1;
        while (b > 0 && (static_cast<unsigned char>(t[b]) & 0xC0) == 0x80) --b;
        if (!py_isspace(decode_utf8(t.substr(b))[0])) break;
        t.remove_suffix(t.size() - b);
    }
    return t;
}

int jinja_text_digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
    return 99;
}

}  // namespace

std::optional<int64_t> py_parse_int(std::string_view text, int base) {
    // CPython PyLong_FromString.
    std::string_view t = jinja_text_trim_ws(text);
    bool negative = false;
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
        negative = t[0] == '-';
        t.remove_prefix(1);
    }
    auto has_prefix = [&](char p) {
        return t.size() >= 2 && t[0] == '0' && (t[1] == p || t[1] == static_cast<char>(p - 32));
    };
    bool prefixed = false;
    if (base == 0) {
        if (has_prefix('x')) base = 16, prefixed = true;
        else if (has_prefix('o')) base = 8, prefixed = true;
        else if (has_prefix('b')) base = 2, prefixed = true;
        else base = 10;
        if (!prefixed && t.size() > 1 && t[0] == '0') {
            // Base 0 rejects leading zeros unless the number is zero ("0_0" is fine).
            for (char c : t)
                if (c != '0' && c != '_') return std::nullopt;
        }
    } else if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) || (base == 2 && has_prefix('b'))) {
        prefixed = true;
    }
    if (prefixed) {
        t.remove_prefix(2);
        if (!t.empty() && t[0] == '_') t.remove_prefix(1);
    }
    if (t.empty()) return std::nullopt;
    unsigned __int128 value = 0;
    bool last_underscore = true;  // no leading underscore
    for (char c : t) {
        if (c == '_') {
            if (last_underscore) return std::nullopt;
            last_underscore = true;
            continue;
        }
        const int d = jinja_text_digit_value(c);
        if (d >= base) return std::nullopt;
        value = value * static_cast<unsigned>(base) + static_cast<unsigned>(d);
        if (value > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + 1)
            throw std::overflow_error("integer too large");
        last_underscore = false;
    }
    if (last_underscore) return std::nullopt;
    if (!negative && value > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()))
        throw std::overflow_error("integer too large");
    return negative ? static_cast<int64_t>(-static_cast<__int128>(value)) : static_cast<int64_t>(value);
}

std::optional<double> py_parse_float(std::string_view text) {
    // CPython float_from_string / _Py_string_to_number_with_underscores.
    std::string_view t = jinja_text_trim_ws(text);
    std::string lowered;
    for (char c : t) lowered += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    std::string_view body = lowered;
    bool negative = false;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
        negative = body[0] == '-';
        body.remove_prefix(1);
    }
    if (body == "inf" || body == "infinity")
        return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
    // digits with single underscores between digits; '.'; exponent.
    std::string clean;
    size_t i = 0;
    auto digits = [&]() {
        size_t count = 0;
        while (i < body.size()) {
            if (body[i] >= '0' && body[i] <= '9') {
                clean += body[i++];
                ++count;
            } else if (body[i] == '_' && count > 0 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '9') {
                ++i;
            } else {
                break;
            }
        }
        return count;
    };
    const size_t int_digits = digits();
    size_t frac_digits = 0;
    if (i < body.size() && body[i] == '.') {
        clean += body[i++];
        frac_digits = digits();
    }
    if (int_digits + frac_digits == 0) return std::nullopt;
    if (i < body.size() && body[i] == 'e') {
        clean += body[i++];
        if (i < body.size() && (body[i] == '+' || body[i] == '-')) clean += body[i++];
        if (digits() == 0) return std::nullopt;
    }
    if (i != body.size()) return std::nullopt;
    double v = 0;
    const auto r = std::from_chars(clean.data(), clean.data() + clean.size(), v, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range) {
        // Overflow gives inf in Python; underflow gives 0.
        const size_t e = clean.find('e');
        v = (e != std::string::npos && clean[e + 1] == '-') ? 0.0 : std::numeric_limits<double>::infinity();
    } else if (r.ec != std::errc() || r.ptr != clean.data() + clean.size()) {
        return std::nullopt;
    }
    return negative ? -v : v;
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '\'': out += "&#39;"; break;
        case '"': out += "&#34;"; break;
        default: out += c;
        }
    }
    return out;
}

}  // namespace ql::jinja
