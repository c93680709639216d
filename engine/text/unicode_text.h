// SPDX-License-Identifier: GPL-3.0-or-later
// UTF-8 and Unicode character properties for the tokenizers. Categories, case mapping and
// normalization forms come from utf8proc; the predicates mirror the Rust standard library
// functions that Hugging Face `tokenizers` calls (char::is_whitespace, is_numeric, ...), so
// that QuantLab's pipeline classifies characters as the reference does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ql::text {

// Decodes the code point at s[i] and advances i. `s` must be valid UTF-8.
inline char32_t next_code_point(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        i += 1;
        return b0;
    }
    if (b0 < 0xE0) {
        const char32_t c = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
        i += 2;
        return c;
    }
    if (b0 < 0xF0) {
        const char32_t c = ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                           (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
        i += 3;
        return c;
    }
    const char32_t c = ((b0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
                       ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
    i += 4;
    return c;
}

// Byte length of the UTF-8 sequence that starts with `lead` (valid UTF-8 assumed).
inline size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

void append_utf8(std::string& out, char32_t c);

// Length of the valid UTF-8 prefix of `s`; s.size() when all of it is valid.
size_t valid_utf8_prefix(std::string_view s);

// Replaces every ill-formed sequence by U+FFFD, one per maximal subpart (Unicode 15 §3.9,
// "U+FFFD substitution of maximal subparts"): what Rust's String::from_utf8_lossy and Python's
// bytes.decode("utf-8", "replace") do.
std::string utf8_lossy(std::string_view bytes);

enum class NormalizationForm { NFC, NFD, NFKC, NFKD };
std::string normalize_unicode(std::string_view s, NormalizationForm form);

// Rust char::is_whitespace (the White_Space property).
bool is_white_space(char32_t c);
// Rust char::is_numeric: general category Nd, Nl or No.
bool is_numeric(char32_t c);
// unicode_categories' is_punctuation: Pc Pd Ps Pe Pi Pf Po.
bool is_punctuation(char32_t c);
inline bool is_ascii_punctuation(char32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}
// unicode_categories' is_other: Cc Cf Co Cs (its Cn table misses unassigned code points).
bool is_other(char32_t c);
// General category Mn.
bool is_nonspacing_mark(char32_t c);
// General category M (Mn Mc Me): unicode-normalization's is_combining_mark.
bool is_combining_mark(char32_t c);
// The Rust `regex` crate's Unicode \w: Alphabetic, marks, Nd, Pc and the joiners.
bool is_regex_word(char32_t c);
// Rust char::to_lowercase, appended to `out` (one code point except U+0130).
void append_lowercase(std::string& out, char32_t c);

}  // namespace ql::text
