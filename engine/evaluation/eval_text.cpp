// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/eval_text.h"

#include "engine/text/unicode_text.h"

namespace ql::evaluation {
namespace {

bool eval_text_is_ascii_punctuation(char32_t c) { return text::is_ascii_punctuation(c); }

// The code point that ends just before s[end] (end > 0), and its start.
char32_t eval_text_previous(std::string_view s, size_t end, size_t& start) {
    start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    return text::next_code_point(s, i);
}

template <typename Strip>
std::string_view eval_text_trim_if(std::string_view s, Strip strip) {
    size_t begin = 0;
    while (begin < s.size()) {
        size_t next = begin;
        if (!strip(text::next_code_point(s, next))) break;
        begin = next;
    }
    size_t end = s.size();
    while (end > begin) {
        size_t start = 0;
        if (!strip(eval_text_previous(s, end, start))) break;
        end = start;
    }
    return s.substr(begin, end - begin);
}

}  // namespace

std::string_view trim_white_space(std::string_view s) {
    return eval_text_trim_if(s, [](char32_t c) { return text::is_white_space(c); });
}

std::string_view trim_white_space_and_punctuation(std::string_view s) {
    return eval_text_trim_if(s, [](char32_t c) { return text::is_white_space(c) || eval_text_is_ascii_punctuation(c); });
}

std::string lowercase(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) text::append_lowercase(out, text::next_code_point(s, i));
    return out;
}

bool contains_word(std::string_view haystack, std::string_view needle) {
    if (needle.empty()) return false;
    for (size_t pos = haystack.find(needle); pos != std::string_view::npos; pos = haystack.find(needle, pos + 1)) {
        bool bounded = true;
        if (pos > 0) {
            size_t start = 0;
            bounded = !text::is_regex_word(eval_text_previous(haystack, pos, start));
        }
        const size_t end = pos + needle.size();
        if (bounded && end < haystack.size()) {
            size_t i = end;
            bounded = !text::is_regex_word(text::next_code_point(haystack, i));
        }
        if (bounded) return true;
    }
    return false;
}

std::string_view utf8_head(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return s;
    size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
    return s.substr(0, end);
}

std::string_view utf8_tail(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return s;
    size_t from = s.size() - max_bytes;
    while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
    return s.substr(from);
}

size_t count_occurrences(std::string_view haystack, std::string_view needle) {
    size_t n = 0;
    if (needle.empty()) return 0;
    for (size_t pos = haystack.find(needle); pos != std::string_view::npos; pos = haystack.find(needle, pos + needle.size())) ++n;
    return n;
}

}  // namespace ql::evaluation
