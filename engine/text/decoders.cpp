// SPDX-License-Identifier: GPL-3.0-or-later
// Decoders of tokenizer.json (tokenizers/src/decoders/*.rs): each maps the list of token
// strings to a new list; the tokenizer joins the final list.
#include <memory>
#include <string>
#include <vector>

#include "engine/text/text_regex.h"
#include "engine/text/tokenizer_components.h"
#include "engine/text/unicode_text.h"

namespace ql::text {
namespace {

std::string join(const std::vector<std::string>& tokens) {
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
}

class ByteLevelDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const std::string& t : tokens) {
            const size_t mark = bytes.size();
            size_t i = 0;
            bool all_mapped = true;
            while (i < t.size()) {
                const int b = char_to_byte(next_code_point(t, i));
                if (b < 0) {
                    all_mapped = false;
                    break;
                }
                bytes += static_cast<char>(b);
            }
            if (!all_mapped) {  // a token outside the byte alphabet (an added token) is taken as is
                bytes.resize(mark);
                bytes += t;
            }
        }
        tokens.assign(1, utf8_lossy(bytes));
    }
    std::string describe() const override { return "ByteLevel"; }
};

class MetaspaceDecoder final : public Decoder {
public:
    MetaspaceDecoder(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t k = 0; k < tokens.size(); ++k) {
            std::string out;
            const std::string& t = tokens[k];
            for (size_t pos = 0; pos < t.size();) {
                if (t.compare(pos, replacement_.size(), replacement_) == 0) {
                    if (!(k == 0 && strip_first_)) out += ' ';
                    pos += replacement_.size();
                } else {
                    out += t[pos++];
                }
            }
            tokens[k] = std::move(out);
        }
    }
    std::string describe() const override { return "Metaspace"; }

private:
    std::string replacement_;
    bool strip_first_;
};

// decoders/wordpiece.rs cleanup(): undoes the spaces BERT's pre-tokenizer put around punctuation.
void replace_all(std::string& s, const std::string& from, const std::string& to) {
    std::string out;
    size_t last = 0;
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, last)) {
        out.append(s, last, pos - last);
        out += to;
        last = pos + from.size();
    }
    if (last == 0) return;
    out.append(s, last, std::string::npos);
    s = std::move(out);
}

class WordPieceDecoder final : public Decoder {
public:
    WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t k = 0; k < tokens.size(); ++k) {
            std::string& t = tokens[k];
            if (k != 0) {
                if (t.compare(0, prefix_.size(), prefix_) == 0) {
                    t.erase(0, prefix_.size());
                } else {
                    t.insert(0, 1, ' ');
                }
            }
            if (cleanup_) {
                static const char* const kPairs[][2] = {{" .", "."},   {" ?", "?"},     {" !", "!"},        {" ,", ","},
                                                        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},      {" do not", " don't"},
                                                        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
                for (const auto& p : kPairs) replace_all(t, p[0], p[1]);
            }
        }
    }
    std::string describe() const override { return "WordPiece"; }

private:
    std::string prefix_;
    bool cleanup_;
};

// "<0xAB>" -> 0xAB, else -1.
int byte_token(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; ++k) {
        const char c = t[k];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v |= c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            v |= c - 'A' + 10;
        } else {
            return -1;
        }
    }
    return v;
}

class ByteFallbackDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        std::string bytes;
        auto flush = [&] {
            if (bytes.empty()) return;
            if (valid_utf8_prefix(bytes) == bytes.size()) {
                out.push_back(bytes);
            } else {  // one U+FFFD per byte, as decoders/byte_fallback.rs
                for (size_t k = 0; k < bytes.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
            }
            bytes.clear();
        };
        for (std::string& t : tokens) {
            const int b = byte_token(t);
            if (b >= 0) {
                bytes += static_cast<char>(b);
            } else {
                flush();
                out.push_back(std::move(t));
            }
        }
        flush();
        tokens = std::move(out);
    }
    std::string describe() const override { return "ByteFallback"; }
};

class FuseDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override { tokens.assign(1, join(tokens)); }
    std::string describe() const override { return "Fuse"; }
};

class StripDecoder final : public Decoder {
public:
    StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (std::string& t : tokens) {
            std::vector<size_t> starts;  // byte offset of every character
            for (size_t i = 0; i < t.size();) {
                starts.push_back(i);
                next_code_point(t, i);
            }
            auto char_at = [&](size_t k) {
                size_t i = starts[k];
                return next_code_point(t, i);
            };
            size_t cut_start = 0, cut_stop = starts.size();
            for (size_t k = 0; k < std::min(start_, starts.size()) && char_at(k) == content_; ++k) cut_start = k + 1;
            for (size_t k = 0; k < std::min(stop_, starts.size()); ++k) {
                const size_t index = starts.size() - k - 1;
                if (char_at(index) != content_) break;
                cut_stop = index;
            }
            if (cut_stop <= cut_start) {
                t.clear();
                continue;
            }
            const size_t b = cut_start < starts.size() ? starts[cut_start] : t.size();
            const size_t e = cut_stop < starts.size() ? starts[cut_stop] : t.size();
            t = t.substr(b, e - b);
        }
    }
    std::string describe() const override { return "Strip"; }

private:
    char32_t content_;
    size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
public:
    ReplaceDecoder(std::string literal, std::unique_ptr<TextRegex> regex, std::string content)
        : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (std::string& t : tokens) {
            if (!regex_) {
                if (!literal_.empty()) replace_all(t, literal_, content_);
                continue;
            }
            std::string out;
            size_t last = 0;
            for (const auto& [b, e] : regex_->find_all(t)) {
                out.append(t, last, b - last);
                out += content_;
                last = e;
            }
            out.append(t, last, std::string::npos);
            t = std::move(out);
        }
    }
    std::string describe() const override { return "Replace"; }

private:
    std::string literal_;
    std::unique_ptr<TextRegex> regex_;
    std::string content_;
};

class BpeSuffixDecoder final : public Decoder {  // decoders/bpe.rs
public:
    explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t k = 0; k < tokens.size(); ++k)
            if (!suffix_.empty()) replace_all(tokens[k], suffix_, k + 1 == tokens.size() ? "" : " ");
    }
    std::string describe() const override { return "BPEDecoder"; }

private:
    std::string suffix_;
};

class SequenceDecoder final : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (const auto& p : parts_) p->decode_chain(tokens);
    }
    std::string describe() const override {
        std::string d = "Sequence[";
        for (size_t i = 0; i < parts_.size(); ++i) d += (i ? ", " : "") + parts_[i]->describe();
        return d + "]";
    }

private:
    std::vector<std::unique_ptr<Decoder>> parts_;
};

size_t count(const Json& j, const JsonPath& at, const std::string& key) {
    const int64_t v = at.integer(j, key, 0);
    if (v < 0) (at / key).fail("must not be negative");
    return static_cast<size_t>(v);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& j, const JsonPath& at) {
    if (j.is_null()) return nullptr;
    if (!j.is_object()) at.fail("expected an object or null");
    const std::string type = at.type(j);
    if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
    if (type == "Metaspace") {
        at.character(j, "replacement");
        bool strip_first = true;  // prepend_scheme "always" (default) or "first"
        if (const auto s = at.optional_string(j, "prepend_scheme")) strip_first = *s != "never";
        if (j.contains("add_prefix_space") && !at.boolean(j, "add_prefix_space", true)) strip_first = false;
        return std::make_unique<MetaspaceDecoder>(at.string(j, "replacement"), strip_first);
    }
    if (type == "WordPiece")
        return std::make_unique<WordPieceDecoder>(at.string(j, "prefix", "##"), at.boolean(j, "cleanup", true));
    if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_unique<FuseDecoder>();
    if (type == "Strip") return std::make_unique<StripDecoder>(at.character(j, "content"), count(j, at, "start"), count(j, at, "stop"));
    if (type == "Replace") {
        std::string literal;
        std::unique_ptr<TextRegex> regex;
        parse_pattern(j, at, literal, regex);
        return std::make_unique<ReplaceDecoder>(literal, std::move(regex), at.string(j, "content"));
    }
    if (type == "BPEDecoder") return std::make_unique<BpeSuffixDecoder>(at.string(j, "suffix", "</w>"));
    if (type == "Sequence") {
        const Json& list = at.array(j, "decoders");
        std::vector<std::unique_ptr<Decoder>> parts;
        for (size_t i = 0; i < list.size(); ++i) {
            auto d = make_decoder(list[i], (at / "decoders")[i]);
            if (d) parts.push_back(std::move(d));
        }
        return std::make_unique<SequenceDecoder>(std::move(parts));
    }
    (at / "type").fail("decoder type '" + type + "' is not supported");
}

}  // namespace ql::text
