// SPDX-License-Identifier: GPL-3.0-or-later
// Python's str behaviour for the Jinja engine of chat templates (engine/text/chat_template.h):
// strings are UTF-8 here but Python counts, indexes and classifies code points, so these helpers
// decode where it matters. Each function names the CPython function it follows
// (Objects/unicodeobject.c, Python/pystrtod.c, Objects/longobject.c) and matches it on valid
// UTF-8 input; case mapping is utf8proc's simple one plus SpecialCasing's multi-character mappings
// (jinja_special_casing.h) and the final sigma rule, as CPython applies them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ql::jinja {

std::u32string decode_utf8(std::string_view s);  // s must be valid UTF-8
std::string encode_utf8(std::u32string_view s);
void append_code_point(std::string& out, char32_t c);
// len(s) in code points.
int64_t code_point_count(std::string_view s);
inline bool is_ascii(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

// str.isspace() of one code point (CPython _PyUnicode_IsWhitespace; also what `\s` matches in
// Python's re for str patterns).
bool py_isspace(char32_t c);
// str.isprintable() of one code point: not Cc, Cf, Cs, Co, Cn, Zl, Zp, or Zs other than ' '.
bool py_isprintable(char32_t c);
bool py_isalpha(char32_t c);   // categories L*
bool py_isdigit(char32_t c);   // Nd (CPython also counts some No digits; not needed by templates)
bool py_isnumeric(char32_t c); // Nd, Nl, No
bool py_isupper_char(char32_t c);  // Lu (Python's _PyUnicode_IsUppercase, not titlecase Lt)
bool py_islower_char(char32_t c);  // Ll
bool py_istitle_char(char32_t c);  // Lt
bool py_iscased(char32_t c);

// str.strip / lstrip / rstrip with chars=None (whitespace) or a set of characters.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit (sep=None splits on whitespace runs); maxsplit < 0 means no limit.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.splitlines(keepends).
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_casefold(std::string_view s);
std::string py_swapcase(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize (first code point title-cased)
std::string py_title(std::string_view s);       // str.title
// str.replace(old, new, count): count < 0 replaces all; an empty `old` inserts between code points.
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);
// str.find / str.rfind in code points within [start, end) given as code point indices (already
// clamped by the caller with Python's slice rules); -1 when absent.
int64_t py_find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse);
int64_t py_count(std::string_view s, std::string_view sub, int64_t start, int64_t end);
// str.center / ljust / rjust / zfill with width in code points.
std::string py_pad(std::string_view s, int64_t width, char32_t fill, int align /* -1 left, 0 center, 1 right */);
std::string py_zfill(std::string_view s, int64_t width);

// repr(str): quotes and escapes as CPython's unicode_repr.
std::string py_str_repr(std::string_view s);
// repr(float) == str(float): shortest round-trip digits, exponent outside 1e-4 <= |x| < 1e16
// (CPython float_repr, 'r' mode of PyOS_double_to_string).
std::string py_float_repr(double d);
// int(text, base) for base 0 or 2..36: whitespace around, sign, underscores between digits;
// nullopt where Python raises ValueError. Throws std::overflow_error beyond int64.
std::optional<int64_t> py_parse_int(std::string_view text, int base);
// float(text): nullopt where Python raises ValueError.
std::optional<double> py_parse_float(std::string_view text);
// markupsafe.escape of a str: & < > ' " as &amp; &lt; &gt; &#39; &#34;.
std::string html_escape(std::string_view s);

}  // namespace ql::jinja
