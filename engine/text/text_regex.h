// SPDX-License-Identifier: GPL-3.0-or-later
// A compiled PCRE2 pattern (UTF-8, Unicode properties, JIT when available) for the regexes in
// tokenizer.json. Hugging Face `tokenizers` runs these patterns with Oniguruma, whose Unicode
// \w also matches marks, letter numbers and connector punctuation, and whose \s is the
// White_Space property; PCRE2's differ, so \w \W \s \S are rewritten to Oniguruma's definitions
// before compiling (\d and \p{..} already agree).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ql::text {

class TextRegex {
public:
    // Throws std::invalid_argument with PCRE2's message and the offset on a bad pattern.
    explicit TextRegex(const std::string& pattern);
    ~TextRegex();
    TextRegex(const TextRegex&) = delete;
    TextRegex& operator=(const TextRegex&) = delete;

    // Successive non-overlapping matches [begin, end) in `s` (valid UTF-8), left to right.
    // An empty match is reported once and the search resumes one character later.
    // Thread-safe: each call uses its own match data.
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;

    const std::string& pattern() const { return pattern_; }

private:
    std::string pattern_;
    void* code_ = nullptr;  // pcre2_code_8
    bool jit_ = false;
};

// The pattern with Oniguruma's \w \W \s \S spelled out as PCRE2 classes.
std::string translate_oniguruma_pattern(const std::string& pattern);

}  // namespace ql::text
