// SPDX-License-Identifier: GPL-3.0-or-later
// Small text helpers the eval checks share (docs/EVAL_SUITES.md): whitespace trimming, Unicode
// lowercasing, whole-word search. All take and return valid UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace ql::evaluation {

// `s` without leading and trailing White_Space characters (Unicode; Python's str.strip() also
// strips U+001C..U+001F, which no model writes).
std::string_view trim_white_space(std::string_view s);
// Python's str.lower(): every character's Unicode lowercase mapping (utf8proc; U+0130 -> "i̇").
std::string lowercase(std::string_view s);
// `s` without leading and trailing runs of White_Space and ASCII punctuation
// (Python's string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
std::string_view trim_white_space_and_punctuation(std::string_view s);
// True when `needle` occurs in `haystack` with no word character (Unicode \w as the regex checks
// use it: letters, marks, digits, connector punctuation) right before or after it. Case-sensitive;
// lowercase both sides first for a case-insensitive search.
bool contains_word(std::string_view haystack, std::string_view needle);
// At most `max_bytes` of the start (end) of `s`, cut at a character boundary: for messages.
std::string_view utf8_head(std::string_view s, size_t max_bytes);
std::string_view utf8_tail(std::string_view s, size_t max_bytes);
// The number of (non-overlapping, left to right) occurrences of `needle` (non-empty) in `haystack`.
size_t count_occurrences(std::string_view haystack, std::string_view needle);

}  // namespace ql::evaluation
