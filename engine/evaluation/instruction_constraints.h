// SPDX-License-Identifier: GPL-3.0-or-later
// Verifiable instructions in the manner of IFEval (Zhou et al. 2023, "Instruction-Following
// Evaluation for Large Language Models"; lm-evaluation-harness lm_eval/tasks/ifeval/
// instructions.py): each constraint is a rule a program can check on the output alone. The kinds
// and their exact definitions are in docs/EVAL_SUITES.md "Instruction constraints"; where IFEval
// has the same rule the definition follows its checker (cited per kind in the .cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ql::evaluation {

enum class ConstraintKind {
    word_count,         // min/max words: runs of \w (IFEval count_words)
    sentence_count,     // min/max sentences (see sentence_count())
    bullet_count,       // min/max bullet lines: "* item" or "- item" (IFEval BulletListChecker)
    keyword_frequency,  // `text` occurs min/max times, case-insensitive (IFEval KeywordFrequencyChecker)
    required_keywords,  // every one of `words` occurs, case-insensitive (IFEval KeywordChecker)
    forbidden_words,    // none of `words` occurs as a whole word, case-insensitive (IFEval ForbiddenWords)
    forbidden_chars,    // none of the characters of `text` occurs
    no_commas,          // no ',' (IFEval CommaChecker)
    starts_with,        // the output, whitespace-trimmed, starts with `text`, case-insensitive
    ends_with,          // the output ends with `text`, case-insensitive (IFEval EndChecker)
    lowercase,          // Python str.islower() (IFEval LowercaseLettersEnglishChecker, without langdetect)
    uppercase,          // Python str.isupper() (IFEval CapitalLettersEnglishChecker, without langdetect)
    json_format,        // the output, without a ``` fence, is JSON (IFEval JsonFormat)
    quotation,          // wrapped in double quotes (IFEval QuotationChecker)
    title,              // has a title <<…>> (IFEval TitleChecker)
};

const char* constraint_kind_name(ConstraintKind k);
std::optional<ConstraintKind> parse_constraint_kind(std::string_view name);

struct InstructionConstraint {
    ConstraintKind kind = ConstraintKind::word_count;
    std::optional<int64_t> min, max;  // the counting kinds: bounds, inclusive
    std::string text;                 // keyword_frequency, forbidden_chars, starts_with, ends_with
    std::vector<std::string> words;   // required_keywords, forbidden_words
};

// One constraint as a suite file writes it: {"kind": "word_count", "max": 20}. Throws
// std::invalid_argument naming the bad field ("max: expected an integer >= 0", "unknown key
// \"foo\"") for a caller that adds file and line.
InstructionConstraint parse_instruction_constraint(const nlohmann::json& j);
nlohmann::ordered_json instruction_constraint_json(const InstructionConstraint& c);

struct ConstraintResult {
    ConstraintKind kind;
    bool passed = false;
    std::string measured;  // what was measured, e.g. "37 words", "starts with \"Sure\""
};

ConstraintResult check_constraint(const InstructionConstraint& c, std::string_view output);

// Counts as the constraints use them (exposed for tests).
int64_t word_count(std::string_view s);
// Sentences: a sentence ends at a run of '.', '!' or '?' that is followed by white space or the
// end of the text; a tail after the last such run counts when it holds a word character. So
// "3.5" and "e.g." inside a word do not split, "Dr. Smith" does (IFEval uses NLTK's Punkt
// model, which needs its trained data; this simpler rule is documented instead).
int64_t sentence_count(std::string_view s);
int64_t bullet_count(std::string_view s);

}  // namespace ql::evaluation
