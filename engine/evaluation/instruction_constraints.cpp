// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/instruction_constraints.h"

#include <utf8proc.h>

#include <stdexcept>

#include "engine/evaluation/eval_text.h"
#include "engine/evaluation/json_extraction.h"
#include "engine/text/text_regex.h"
#include "engine/text/unicode_text.h"

namespace ql::evaluation {
namespace {

struct ConstraintKindName {
    ConstraintKind kind;
    const char* name;
};
constexpr ConstraintKindName kConstraintKinds[] = {
    {ConstraintKind::word_count, "word_count"},
    {ConstraintKind::sentence_count, "sentence_count"},
    {ConstraintKind::bullet_count, "bullet_count"},
    {ConstraintKind::keyword_frequency, "keyword_frequency"},
    {ConstraintKind::required_keywords, "required_keywords"},
    {ConstraintKind::forbidden_words, "forbidden_words"},
    {ConstraintKind::forbidden_chars, "forbidden_chars"},
    {ConstraintKind::no_commas, "no_commas"},
    {ConstraintKind::starts_with, "starts_with"},
    {ConstraintKind::ends_with, "ends_with"},
    {ConstraintKind::lowercase, "lowercase"},
    {ConstraintKind::uppercase, "uppercase"},
    {ConstraintKind::json_format, "json_format"},
    {ConstraintKind::quotation, "quotation"},
    {ConstraintKind::title, "title"},
};

bool constraint_counts(ConstraintKind k) {
    return k == ConstraintKind::word_count || k == ConstraintKind::sentence_count || k == ConstraintKind::bullet_count ||
           k == ConstraintKind::keyword_frequency;
}
bool constraint_takes_text(ConstraintKind k) {
    return k == ConstraintKind::keyword_frequency || k == ConstraintKind::forbidden_chars || k == ConstraintKind::starts_with ||
           k == ConstraintKind::ends_with;
}
bool constraint_takes_words(ConstraintKind k) {
    return k == ConstraintKind::required_keywords || k == ConstraintKind::forbidden_words;
}

std::string constraint_quoted(const std::string& s) { return nlohmann::json(s).dump(); }

bool constraint_within(const InstructionConstraint& c, int64_t n) {
    return (!c.min || n >= *c.min) && (!c.max || n <= *c.max);
}

// Python's str.islower() / str.isupper(): every cased character has the case and there is at
// least one (cased: utf8proc's lower, upper or title case letters).
bool constraint_all_cased_as(std::string_view s, bool lower) {
    bool cased = false;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<utf8proc_int32_t>(text::next_code_point(s, i));
        const bool is_lower = utf8proc_islower(c), is_upper = utf8proc_isupper(c);
        const bool is_title = utf8proc_category(c) == UTF8PROC_CATEGORY_LT;
        if (is_title || (lower ? is_upper : is_lower)) return false;
        if (lower ? is_lower : is_upper) cased = true;
    }
    return cased;
}

std::string_view constraint_remove_prefix(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p ? s.substr(p.size()) : s;
}

int64_t constraint_count(const InstructionConstraint& c, std::string_view output) {
    switch (c.kind) {
        case ConstraintKind::word_count: return word_count(output);
        case ConstraintKind::sentence_count: return sentence_count(output);
        case ConstraintKind::bullet_count: return bullet_count(output);
        case ConstraintKind::keyword_frequency:
            return static_cast<int64_t>(count_occurrences(lowercase(output), lowercase(c.text)));
        default: return 0;
    }
}

const char* constraint_unit(ConstraintKind k) {
    switch (k) {
        case ConstraintKind::word_count: return " words";
        case ConstraintKind::sentence_count: return " sentences";
        case ConstraintKind::bullet_count: return " bullets";
        default: return " occurrences";
    }
}

}  // namespace

const char* constraint_kind_name(ConstraintKind k) {
    for (const auto& e : kConstraintKinds)
        if (e.kind == k) return e.name;
    return "?";
}

std::optional<ConstraintKind> parse_constraint_kind(std::string_view name) {
    for (const auto& e : kConstraintKinds)
        if (name == e.name) return e.kind;
    return std::nullopt;
}

InstructionConstraint parse_instruction_constraint(const nlohmann::json& j) {
    if (!j.is_object()) throw std::invalid_argument("expected an object");
    if (!j.contains("kind") || !j["kind"].is_string()) throw std::invalid_argument("kind: expected a string");
    const auto kind = parse_constraint_kind(j["kind"].get<std::string>());
    if (!kind) throw std::invalid_argument("kind: unknown constraint " + constraint_quoted(j["kind"].get<std::string>()));
    InstructionConstraint c;
    c.kind = *kind;
    for (const auto& [key, value] : j.items()) {
        if (key == "kind") continue;
        if ((key == "min" || key == "max") && constraint_counts(c.kind)) {
            if (!value.is_number_integer() || value.get<int64_t>() < 0)
                throw std::invalid_argument(key + ": expected an integer >= 0");
            (key == "min" ? c.min : c.max) = value.get<int64_t>();
        } else if (key == "text" && constraint_takes_text(c.kind)) {
            if (!value.is_string() || value.get<std::string>().empty()) throw std::invalid_argument("text: expected a non-empty string");
            c.text = value.get<std::string>();
        } else if (key == "words" && constraint_takes_words(c.kind)) {
            if (!value.is_array() || value.empty()) throw std::invalid_argument("words: expected a non-empty list of strings");
            for (const auto& w : value) {
                if (!w.is_string() || w.get<std::string>().empty())
                    throw std::invalid_argument("words: expected a non-empty list of non-empty strings");
                c.words.push_back(w.get<std::string>());
            }
        } else {
            throw std::invalid_argument("unknown key " + constraint_quoted(key) + " for " + constraint_kind_name(c.kind));
        }
    }
    if (constraint_counts(c.kind) && !c.min && !c.max) throw std::invalid_argument("min/max: give at least one bound");
    if (c.min && c.max && *c.min > *c.max) throw std::invalid_argument("min: greater than max");
    if (constraint_takes_text(c.kind) && c.text.empty()) throw std::invalid_argument("text: missing");
    if (constraint_takes_words(c.kind) && c.words.empty()) throw std::invalid_argument("words: missing");
    return c;
}

nlohmann::ordered_json instruction_constraint_json(const InstructionConstraint& c) {
    nlohmann::ordered_json j;
    j["kind"] = constraint_kind_name(c.kind);
    if (c.min) j["min"] = *c.min;
    if (c.max) j["max"] = *c.max;
    if (constraint_takes_text(c.kind)) j["text"] = c.text;
    if (constraint_takes_words(c.kind)) j["words"] = c.words;
    return j;
}

int64_t word_count(std::string_view s) {
    // IFEval instructions_util.count_words: nltk RegexpTokenizer(r"\w+"), i.e. runs of \w.
    int64_t n = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.size();) {
        const bool w = text::is_regex_word(text::next_code_point(s, i));
        if (w && !in_word) ++n;
        in_word = w;
    }
    return n;
}

int64_t sentence_count(std::string_view s) {
    int64_t n = 0;
    bool words_since_end = false;  // a word character since the last sentence end
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::next_code_point(s, i);
        if (c == '.' || c == '!' || c == '?') {
            size_t j = i;
            while (j < s.size() && (s[j] == '.' || s[j] == '!' || s[j] == '?')) ++j;
            size_t k = j;
            if (j == s.size() || text::is_white_space(text::next_code_point(s, k))) {
                if (words_since_end) ++n;
                words_since_end = false;
            }
            i = j;
            continue;
        }
        if (text::is_regex_word(c)) words_since_end = true;
    }
    return n + (words_since_end ? 1 : 0);
}

int64_t bullet_count(std::string_view s) {
    // IFEval BulletListChecker: re.findall(r"^\s*\*[^\*].*$") + re.findall(r"^\s*-.*$"), both
    // MULTILINE (TextRegex's \s is White_Space, as Python's).
    static const text::TextRegex star("(?m)^\\s*\\*[^\\*].*$");
    static const text::TextRegex dash("(?m)^\\s*-.*$");
    return static_cast<int64_t>(star.find_all(s).size() + dash.find_all(s).size());
}

ConstraintResult check_constraint(const InstructionConstraint& c, std::string_view output) {
    ConstraintResult r{c.kind, false, ""};
    switch (c.kind) {
        case ConstraintKind::word_count:
        case ConstraintKind::sentence_count:
        case ConstraintKind::bullet_count:
        case ConstraintKind::keyword_frequency: {
            const int64_t n = constraint_count(c, output);
            r.passed = constraint_within(c, n);
            r.measured = std::to_string(n) + constraint_unit(c.kind);
            break;
        }
        case ConstraintKind::required_keywords: {  // IFEval KeywordChecker: re.search(keyword, IGNORECASE)
            const std::string low = lowercase(output);
            r.passed = true;
            for (const auto& w : c.words) {
                if (low.find(lowercase(w)) == std::string::npos) {
                    r.passed = false;
                    r.measured += (r.measured.empty() ? "missing " : ", ") + constraint_quoted(w);
                }
            }
            if (r.passed) r.measured = "all present";
            break;
        }
        case ConstraintKind::forbidden_words: {  // IFEval ForbiddenWords: \bword\b, IGNORECASE
            const std::string low = lowercase(output);
            r.passed = true;
            for (const auto& w : c.words) {
                if (contains_word(low, lowercase(w))) {
                    r.passed = false;
                    r.measured += (r.measured.empty() ? "uses " : ", ") + constraint_quoted(w);
                }
            }
            if (r.passed) r.measured = "none used";
            break;
        }
        case ConstraintKind::forbidden_chars: {
            r.passed = true;
            for (size_t i = 0; i < c.text.size();) {
                const size_t start = i;
                text::next_code_point(c.text, i);
                const std::string ch = c.text.substr(start, i - start);
                if (output.find(ch) != std::string_view::npos) {
                    r.passed = false;
                    r.measured += (r.measured.empty() ? "uses " : ", ") + constraint_quoted(ch);
                }
            }
            if (r.passed) r.measured = "none used";
            break;
        }
        case ConstraintKind::no_commas: {  // IFEval CommaChecker
            const size_t n = count_occurrences(output, ",");
            r.passed = n == 0;
            r.measured = std::to_string(n) + " commas";
            break;
        }
        case ConstraintKind::starts_with: {
            const std::string head = lowercase(trim_white_space(output));
            const std::string want = lowercase(trim_white_space(c.text));
            r.passed = head.compare(0, want.size(), want) == 0;
            r.measured = "starts with " + constraint_quoted(std::string(utf8_head(trim_white_space(output), 40)));
            break;
        }
        case ConstraintKind::ends_with: {  // IFEval EndChecker: value.strip().strip('"').lower().endswith(...)
            std::string_view v = trim_white_space(output);
            while (!v.empty() && v.front() == '"') v.remove_prefix(1);
            while (!v.empty() && v.back() == '"') v.remove_suffix(1);
            const std::string tail = lowercase(v), want = lowercase(trim_white_space(c.text));
            r.passed = tail.size() >= want.size() && tail.compare(tail.size() - want.size(), want.size(), want) == 0;
            r.measured = "ends with " + constraint_quoted(std::string(utf8_tail(v, 40)));
            break;
        }
        case ConstraintKind::lowercase:
        case ConstraintKind::uppercase: {
            const bool lower = c.kind == ConstraintKind::lowercase;
            r.passed = constraint_all_cased_as(output, lower);
            r.measured = r.passed ? (lower ? "all lowercase" : "all uppercase") : (lower ? "not all lowercase" : "not all uppercase");
            break;
        }
        case ConstraintKind::json_format: {  // IFEval JsonFormat: strip, remove a ``` fence, json.loads
            std::string_view v = trim_white_space(output);
            for (std::string_view p : {"```json", "```Json", "```JSON", "```"}) v = constraint_remove_prefix(v, p);
            if (v.size() >= 3 && v.substr(v.size() - 3) == "```") v.remove_suffix(3);
            r.passed = parse_json_text(trim_white_space(v)).has_value();
            r.measured = r.passed ? "JSON" : "not JSON";
            break;
        }
        case ConstraintKind::quotation: {  // IFEval QuotationChecker
            const std::string_view v = trim_white_space(output);
            r.passed = v.size() > 1 && v.front() == '"' && v.back() == '"';
            r.measured = r.passed ? "quoted" : "not quoted";
            break;
        }
        case ConstraintKind::title: {  // IFEval TitleChecker: r"<<[^\n]+>>" with a non-blank inside
            static const text::TextRegex title("<<[^\\n]+>>");
            for (const auto& [b, e] : title.find_all(output)) {
                std::string_view t = output.substr(b, e - b);
                while (!t.empty() && t.front() == '<') t.remove_prefix(1);
                while (!t.empty() && t.back() == '>') t.remove_suffix(1);
                if (!trim_white_space(t).empty()) r.passed = true;
            }
            r.measured = r.passed ? "has a title" : "no title";
            break;
        }
    }
    return r;
}

}  // namespace ql::evaluation
