// SPDX-License-Identifier: GPL-3.0-or-later
// Pre-tokenizers of tokenizer.json (tokenizers/src/pre_tokenizers/*.rs). Splitting follows
// NormalizedString::split: a pattern yields spans that cover the text (match or not), the
// behaviour decides what is kept and merged, and empty pieces are dropped.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/text_regex.h"
#include "engine/text/tokenizer_components.h"
#include "engine/text/unicode_text.h"

namespace ql::text {
namespace {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct Span {
    size_t begin, end;
    bool match;
};

// Pattern::find_matches for a regex (tokenizer/pattern.rs).
std::vector<Span> regex_spans(const TextRegex& re, const std::string& s) {
    if (s.empty()) return {{0, 0, false}};
    std::vector<Span> spans;
    size_t prev = 0;
    for (const auto& [b, e] : re.find_all(s)) {
        if (prev != b) spans.push_back({prev, b, false});
        spans.push_back({b, e, true});
        prev = e;
    }
    if (prev != s.size()) spans.push_back({prev, s.size(), false});
    return spans;
}

// Pattern::find_matches for a character predicate: every matching character is its own match.
template <typename Pred>
std::vector<Span> char_spans(const std::string& s, Pred pred) {
    if (s.empty()) return {{0, 0, false}};
    std::vector<Span> spans;
    size_t last = 0, i = 0;
    while (i < s.size()) {
        const size_t b = i;
        const char32_t c = next_code_point(s, i);
        if (pred(c)) {
            if (last < b) spans.push_back({last, b, false});
            spans.push_back({b, i, true});
            last = i;
        }
    }
    if (s.size() > last) spans.push_back({last, s.size(), false});
    return spans;
}

// NormalizedString::split: applies the behaviour, appends the kept non-empty pieces to `out`.
void split_piece(const Piece& p, std::vector<Span> spans, SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
    if (invert)
        for (auto& s : spans) s.match = !s.match;
    std::vector<std::pair<Span, bool>> kept;  // (span, remove)
    kept.reserve(spans.size());
    bool previous = false;
    switch (behavior) {
        case SplitBehavior::Isolated:
            for (const auto& s : spans) kept.push_back({s, false});
            break;
        case SplitBehavior::Removed:
            for (const auto& s : spans) kept.push_back({s, s.match});
            break;
        case SplitBehavior::Contiguous:
            for (const auto& s : spans) {
                if (s.match == previous && !kept.empty()) {
                    kept.back().first.end = s.end;
                } else {
                    kept.push_back({s, false});
                }
                previous = s.match;
            }
            break;
        case SplitBehavior::MergedWithPrevious:
            for (const auto& s : spans) {
                if (s.match && !previous && !kept.empty()) {
                    kept.back().first.end = s.end;
                } else {
                    kept.push_back({s, false});
                }
                previous = s.match;
            }
            break;
        case SplitBehavior::MergedWithNext:
            for (size_t k = spans.size(); k-- > 0;) {
                const Span& s = spans[k];
                if (s.match && !previous && !kept.empty()) {
                    kept.back().first.begin = s.begin;
                } else {
                    kept.push_back({s, false});
                }
                previous = s.match;
            }
            std::reverse(kept.begin(), kept.end());
            break;
    }
    for (const auto& [s, remove] : kept) {
        if (remove || s.end == s.begin) continue;
        out.push_back({p.text.substr(s.begin, s.end - s.begin), p.at_start && s.begin == 0});
    }
}

SplitBehavior parse_behavior(const Json& j, const JsonPath& at, SplitBehavior fallback) {
    if (!j.contains("behavior")) return fallback;
    const std::string b = at.string(j, "behavior");
    if (b == "Removed") return SplitBehavior::Removed;
    if (b == "Isolated") return SplitBehavior::Isolated;
    if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (b == "Contiguous") return SplitBehavior::Contiguous;
    (at / "behavior").fail("unknown split behavior '" + b + "'");
}

// Applies `split(piece, out)` to every piece.
template <typename F>
void split_all(std::vector<Piece>& pieces, F split) {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    for (const Piece& p : pieces) split(p, out);
    pieces = std::move(out);
}

// pre_tokenizers/byte_level.rs: the GPT-2 pattern from openai/gpt-2 encoder.py.
const TextRegex& gpt2_regex() {
    static const TextRegex re(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
    return re;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool prefix_space, bool use_regex) : prefix_space_(prefix_space), use_regex_(use_regex) {}
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [&](const Piece& p, std::vector<Piece>& out) {
            Piece q = p;
            if (prefix_space_ && !q.text.empty() && q.text[0] != ' ') q.text.insert(0, 1, ' ');
            if (use_regex_) {
                split_piece(q, regex_spans(gpt2_regex(), q.text), SplitBehavior::Isolated, false, out);
            } else if (!q.text.empty()) {
                out.push_back(std::move(q));
            }
        });
        for (Piece& p : pieces) {
            std::string mapped;
            mapped.reserve(p.text.size() * 2);
            for (unsigned char b : p.text) mapped += byte_to_char_utf8(b);
            p.text = std::move(mapped);
        }
    }
    std::string describe() const override {
        return std::string("ByteLevel") + (prefix_space_ ? "(add_prefix_space)" : "") + (use_regex_ ? "" : "(no regex)");
    }

private:
    bool prefix_space_, use_regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(std::unique_ptr<TextRegex> re, SplitBehavior b, bool invert)
        : re_(std::move(re)), behavior_(b), invert_(invert) {}
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [&](const Piece& p, std::vector<Piece>& out) {
            split_piece(p, regex_spans(*re_, p.text), behavior_, invert_, out);
        });
    }
    std::string describe() const override { return "Split(" + re_->pattern() + ")"; }

private:
    std::unique_ptr<TextRegex> re_;
    SplitBehavior behavior_;
    bool invert_;
};

enum class PrependScheme { Always, Never, First };

PrependScheme parse_prepend_scheme(const Json& j, const JsonPath& at) {
    PrependScheme scheme = PrependScheme::Always;
    if (const auto s = at.optional_string(j, "prepend_scheme")) {
        if (*s == "always") {
            scheme = PrependScheme::Always;
        } else if (*s == "never") {
            scheme = PrependScheme::Never;
        } else if (*s == "first") {
            scheme = PrependScheme::First;
        } else {
            (at / "prepend_scheme").fail("expected \"always\", \"never\" or \"first\"");
        }
    }
    if (j.contains("add_prefix_space") && !at.boolean(j, "add_prefix_space", true)) {  // legacy field
        if (scheme != PrependScheme::Never && j.contains("prepend_scheme"))
            (at / "add_prefix_space").fail("add_prefix_space does not match declared prepend_scheme");
        scheme = PrependScheme::Never;
    }
    return scheme;
}

class MetaspacePreTokenizer final : public PreTokenizer {
public:
    MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
        : replacement_char_(replacement), scheme_(scheme), split_(split) {
        append_utf8(replacement_, replacement);
    }
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [&](const Piece& p, std::vector<Piece>& out) {
            Piece q{std::string(), p.at_start};
            q.text.reserve(p.text.size() + 8);
            for (char c : p.text) {
                if (c == ' ') {
                    q.text += replacement_;
                } else {
                    q.text += c;
                }
            }
            const bool starts = q.text.compare(0, replacement_.size(), replacement_) == 0;
            if (!q.text.empty() && !starts &&
                (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && q.at_start)))
                q.text.insert(0, replacement_);
            if (split_) {
                split_piece(q, char_spans(q.text, [&](char32_t c) { return c == replacement_char_; }),
                            SplitBehavior::MergedWithNext, false, out);
            } else if (!q.text.empty()) {
                out.push_back(std::move(q));
            }
        });
    }
    std::string describe() const override { return "Metaspace"; }

private:
    std::string replacement_;
    char32_t replacement_char_;
    PrependScheme scheme_;
    bool split_;
};

// pre_tokenizers/whitespace.rs runs \w+|[^\w\s]+ on the Rust regex crate, whose Unicode \w and
// \s are those TextRegex gives Oniguruma's (UTS #18 word characters, White_Space).
const TextRegex& whitespace_regex() {
    static const TextRegex re(R"(\w+|[^\w\s]+)");
    return re;
}

class WhitespacePreTokenizer final : public PreTokenizer {
public:
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [&](const Piece& p, std::vector<Piece>& out) {
            split_piece(p, regex_spans(whitespace_regex(), p.text), SplitBehavior::Removed, true, out);
        });
    }
    std::string describe() const override { return "Whitespace"; }
};

// Splits on characters chosen by a predicate (WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit).
template <typename Pred>
class CharSplitPreTokenizer final : public PreTokenizer {
public:
    CharSplitPreTokenizer(std::string name, Pred pred, SplitBehavior b) : name_(std::move(name)), pred_(pred), behavior_(b) {}
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [&](const Piece& p, std::vector<Piece>& out) {
            split_piece(p, char_spans(p.text, pred_), behavior_, false, out);
        });
    }
    std::string describe() const override { return name_; }

private:
    std::string name_;
    Pred pred_;
    SplitBehavior behavior_;
};

template <typename Pred>
std::unique_ptr<PreTokenizer> char_split(std::string name, Pred pred, SplitBehavior b) {
    return std::make_unique<CharSplitPreTokenizer<Pred>>(std::move(name), pred, b);
}

bool is_bert_punctuation(char32_t c) { return is_ascii_punctuation(c) || is_punctuation(c); }

class BertPreTokenizer final : public PreTokenizer {
public:
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        split_all(pieces, [](const Piece& p, std::vector<Piece>& out) {
            split_piece(p, char_spans(p.text, is_white_space), SplitBehavior::Removed, false, out);
        });
        split_all(pieces, [](const Piece& p, std::vector<Piece>& out) {
            split_piece(p, char_spans(p.text, is_bert_punctuation), SplitBehavior::Isolated, false, out);
        });
    }
    std::string describe() const override { return "BertPreTokenizer"; }
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
    void pre_tokenize(std::vector<Piece>& pieces) const override {
        for (const auto& p : parts_) p->pre_tokenize(pieces);
    }
    std::string describe() const override {
        std::string d = "Sequence[";
        for (size_t i = 0; i < parts_.size(); ++i) d += (i ? ", " : "") + parts_[i]->describe();
        return d + "]";
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const JsonPath& at) {
    if (j.is_null()) return nullptr;
    if (!j.is_object()) at.fail("expected an object or null");
    const std::string type = at.type(j);
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelPreTokenizer>(at.boolean(j, "add_prefix_space", true), at.boolean(j, "use_regex", true));
    if (type == "Split") {
        std::string literal;
        std::unique_ptr<TextRegex> regex;
        parse_pattern(j, at, literal, regex);
        if (!regex) {  // a literal: escaped and compiled, as split.rs does with regex::escape
            std::string escaped = "\\Q";
            for (size_t pos = 0;;) {  // \Q..\E cannot hold "\E" itself
                const size_t e = literal.find("\\E", pos);
                if (e == std::string::npos) {
                    escaped += literal.substr(pos);
                    break;
                }
                escaped += literal.substr(pos, e - pos) + "\\E\\\\E\\Q";
                pos = e + 2;
            }
            regex = std::make_unique<TextRegex>(escaped + "\\E");
        }
        if (!j.contains("behavior")) (at / "behavior").fail("missing");
        return std::make_unique<SplitPreTokenizer>(std::move(regex), parse_behavior(j, at, SplitBehavior::Removed),
                                                   at.boolean(j, "invert", false));
    }
    if (type == "Metaspace")
        return std::make_unique<MetaspacePreTokenizer>(at.character(j, "replacement"), parse_prepend_scheme(j, at),
                                                       at.boolean(j, "split", true));
    if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
    if (type == "WhitespaceSplit") return char_split("WhitespaceSplit", is_white_space, SplitBehavior::Removed);
    if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
    if (type == "Punctuation")
        return char_split("Punctuation", is_bert_punctuation, parse_behavior(j, at, SplitBehavior::Isolated));
    if (type == "Digits") {
        const bool individual = at.boolean(j, "individual_digits", false);
        return char_split(individual ? "Digits(individual)" : "Digits", is_numeric,
                          individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
    }
    if (type == "CharDelimiterSplit") {
        const char32_t delimiter = at.character(j, "delimiter");
        return char_split("CharDelimiterSplit", [delimiter](char32_t c) { return c == delimiter; }, SplitBehavior::Removed);
    }
    if (type == "Sequence") {
        const Json& list = at.array(j, "pretokenizers");
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        for (size_t i = 0; i < list.size(); ++i) {
            auto p = make_pre_tokenizer(list[i], (at / "pretokenizers")[i]);
            if (p) parts.push_back(std::move(p));
        }
        return std::make_unique<SequencePreTokenizer>(std::move(parts));
    }
    (at / "type").fail("pre_tokenizer type '" + type + "' is not supported");
}

}  // namespace ql::text
