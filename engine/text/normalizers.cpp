// SPDX-License-Identifier: GPL-3.0-or-later
// Normalizers of tokenizer.json (tokenizers/src/normalizers/*.rs), applied to whole strings.
#include <memory>
#include <string>
#include <vector>

#include "engine/text/text_regex.h"
#include "engine/text/tokenizer_components.h"
#include "engine/text/unicode_text.h"

namespace ql::text {
namespace {

// Calls f(code_point, out) for every code point of s; f appends what replaces it.
template <typename F>
std::string map_chars(const std::string& s, F f) {
    std::string out;
    out.reserve(s.size() + s.size() / 8);
    size_t i = 0;
    while (i < s.size()) f(next_code_point(s, i), out);
    return out;
}

bool is_chinese_char(char32_t c) {  // normalizers/bert.rs is_chinese_char
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string lowercase(const std::string& s) {
    return map_chars(s, [](char32_t c, std::string& out) { append_lowercase(out, c); });
}

class BertNormalizer final : public Normalizer {
public:
    BertNormalizer(bool clean, bool chinese, bool strip, bool lower)
        : clean_(clean), chinese_(chinese), strip_accents_(strip), lowercase_(lower) {}
    void normalize(std::string& s) const override {
        if (clean_) {
            s = map_chars(s, [](char32_t c, std::string& out) {
                if (c == 0 || c == 0xFFFD) return;
                if (c == '\t' || c == '\n' || c == '\r') {
                    out += ' ';
                } else if (is_other(c)) {
                    return;
                } else if (is_white_space(c)) {
                    out += ' ';
                } else {
                    append_utf8(out, c);
                }
            });
        }
        if (chinese_) {
            s = map_chars(s, [](char32_t c, std::string& out) {
                if (is_chinese_char(c)) {
                    out += ' ';
                    append_utf8(out, c);
                    out += ' ';
                } else {
                    append_utf8(out, c);
                }
            });
        }
        if (strip_accents_) {
            s = map_chars(normalize_unicode(s, NormalizationForm::NFD), [](char32_t c, std::string& out) {
                if (!is_nonspacing_mark(c)) append_utf8(out, c);
            });
        }
        if (lowercase_) s = lowercase(s);
    }
    std::string describe() const override {
        return std::string("BertNormalizer(") + (lowercase_ ? "lowercase" : "cased") + (strip_accents_ ? ", strip accents" : "") + ")";
    }

private:
    bool clean_, chinese_, strip_accents_, lowercase_;
};

class UnicodeNormalizer final : public Normalizer {
public:
    UnicodeNormalizer(NormalizationForm form, std::string name) : form_(form), name_(std::move(name)) {}
    void normalize(std::string& s) const override { s = normalize_unicode(s, form_); }
    std::string describe() const override { return name_; }

private:
    NormalizationForm form_;
    std::string name_;
};

class LowercaseNormalizer final : public Normalizer {
public:
    void normalize(std::string& s) const override { s = lowercase(s); }
    std::string describe() const override { return "Lowercase"; }
};

class StripAccentsNormalizer final : public Normalizer {
public:
    void normalize(std::string& s) const override {
        s = map_chars(s, [](char32_t c, std::string& out) {
            if (!is_combining_mark(c)) append_utf8(out, c);
        });
    }
    std::string describe() const override { return "StripAccents"; }
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string& s) const override {
        size_t begin = 0, end = s.size();
        if (left_) {
            size_t i = 0;
            while (i < s.size()) {
                size_t j = i;
                if (!is_white_space(next_code_point(s, j))) break;
                i = j;
            }
            begin = i;
        }
        if (right_) {
            while (end > begin) {
                size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
                size_t j = start;
                if (!is_white_space(next_code_point(s, j))) break;
                end = start;
            }
        }
        s = s.substr(begin, end - begin);
    }
    std::string describe() const override { return "Strip"; }

private:
    bool left_, right_;
};

class NmtNormalizer final : public Normalizer {  // normalizers/unicode.rs do_nmt
public:
    void normalize(std::string& s) const override {
        s = map_chars(s, [](char32_t c, std::string& out) {
            if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F) return;
            const bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
                               (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
                               c == 0xFEFF || c == 0xFFFD;
            if (space) {
                out += ' ';
            } else {
                append_utf8(out, c);
            }
        });
    }
    std::string describe() const override { return "Nmt"; }
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(std::string literal, std::unique_ptr<TextRegex> regex, std::string content)
        : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
    void normalize(std::string& s) const override;
    std::string describe() const override { return "Replace"; }

private:
    std::string literal_;
    std::unique_ptr<TextRegex> regex_;
    std::string content_;
};

class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
    void normalize(std::string& s) const override {
        if (!s.empty()) s.insert(0, prefix_);
    }
    std::string describe() const override { return "Prepend"; }

private:
    std::string prefix_;
};

class ByteLevelNormalizer final : public Normalizer {
public:
    void normalize(std::string& s) const override {
        std::string out;
        out.reserve(s.size() * 2);
        for (unsigned char b : s) out += byte_to_char_utf8(b);
        s = std::move(out);
    }
    std::string describe() const override { return "ByteLevel"; }
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
    void normalize(std::string& s) const override {
        for (const auto& p : parts_) p->normalize(s);
    }
    std::string describe() const override {
        std::string d = "Sequence[";
        for (size_t i = 0; i < parts_.size(); ++i) d += (i ? ", " : "") + parts_[i]->describe();
        return d + "]";
    }

private:
    std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

// Replaces every non-overlapping occurrence, left to right (NormalizedString::replace).
void ReplaceNormalizer::normalize(std::string& s) const {
    std::string out;
    out.reserve(s.size());
    size_t last = 0;
    if (regex_) {
        for (const auto& [b, e] : regex_->find_all(s)) {
            out.append(s, last, b - last);
            out += content_;
            last = e;
        }
    } else {
        if (literal_.empty()) return;
        for (size_t pos = s.find(literal_); pos != std::string::npos; pos = s.find(literal_, last)) {
            out.append(s, last, pos - last);
            out += content_;
            last = pos + literal_.size();
        }
    }
    out.append(s, last, std::string::npos);
    s = std::move(out);
}

// A {"String": s} or {"Regex": r} pattern (Replace normalizer/decoder, Split pre-tokenizer).
void parse_pattern(const Json& j, const JsonPath& at, std::string& literal, std::unique_ptr<TextRegex>& regex) {
    const Json& p = at.require(j, "pattern");
    const JsonPath pat = at / "pattern";
    if (p.is_object() && p.contains("String")) {
        literal = pat.string(p, "String");
    } else if (p.is_object() && p.contains("Regex")) {
        try {
            regex = std::make_unique<TextRegex>(pat.string(p, "Regex"));
        } catch (const std::invalid_argument& e) {
            (pat / "Regex").fail(e.what());
        }
    } else {
        pat.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
}

std::unique_ptr<Normalizer> make_normalizer(const Json& j, const JsonPath& at) {
    if (j.is_null()) return nullptr;
    if (!j.is_object()) at.fail("expected an object or null");
    const std::string type = at.type(j);
    if (type == "BertNormalizer") {
        const bool lower = at.boolean(j, "lowercase", true);
        return std::make_unique<BertNormalizer>(at.boolean(j, "clean_text", true), at.boolean(j, "handle_chinese_chars", true),
                                                at.boolean(j, "strip_accents", lower), lower);
    }
    if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFC, type);
    if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFD, type);
    if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFKC, type);
    if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFKD, type);
    if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
    if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
    if (type == "Strip") return std::make_unique<StripNormalizer>(at.boolean(j, "strip_left", false), at.boolean(j, "strip_right", false));
    if (type == "Nmt") return std::make_unique<NmtNormalizer>();
    if (type == "Prepend") return std::make_unique<PrependNormalizer>(at.string(j, "prepend"));
    if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
    if (type == "Replace") {
        std::string literal;
        std::unique_ptr<TextRegex> regex;
        parse_pattern(j, at, literal, regex);
        return std::make_unique<ReplaceNormalizer>(literal, std::move(regex), at.string(j, "content"));
    }
    if (type == "Sequence") {
        const Json& list = at.array(j, "normalizers");
        std::vector<std::unique_ptr<Normalizer>> parts;
        for (size_t i = 0; i < list.size(); ++i) {
            auto n = make_normalizer(list[i], (at / "normalizers")[i]);
            if (n) parts.push_back(std::move(n));
        }
        return std::make_unique<SequenceNormalizer>(std::move(parts));
    }
    (at / "type").fail("normalizer type '" + type + "' is not supported");
}

}  // namespace ql::text
