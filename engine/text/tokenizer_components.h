// SPDX-License-Identifier: GPL-3.0-or-later
// The stages of a tokenizer.json pipeline (Hugging Face `tokenizers` serialization):
// normalizer -> pre-tokenizer -> model -> post-processor on the way in, decoder on the way out.
// Internal to engine/text; the facade is engine/text/tokenizer.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ql::text {

using Json = nlohmann::json;
class TextRegex;

// Where a value sits in a tokenizer.json, for error messages: "<file>: pre_tokenizer.pretokenizers[1]".
class JsonPath {
public:
    JsonPath(const std::string& file, std::string path) : file_(&file), path_(std::move(path)) {}
    JsonPath operator/(const std::string& key) const { return {*file_, path_.empty() ? key : path_ + "." + key}; }
    JsonPath operator[](size_t index) const { return {*file_, path_ + "[" + std::to_string(index) + "]"}; }
    const std::string& file() const { return *file_; }
    const std::string& path() const { return path_; }
    // Throws ql::UserError("<file>: tokenizer.json field '<path>': <what>").
    [[noreturn]] void fail(const std::string& what) const;

    // Typed accessors; a missing key uses the default where one is given, else fails.
    const Json& require(const Json& object, const std::string& key) const;
    std::string string(const Json& object, const std::string& key) const;
    std::string string(const Json& object, const std::string& key, const std::string& fallback) const;
    std::optional<std::string> optional_string(const Json& object, const std::string& key) const;
    bool boolean(const Json& object, const std::string& key, bool fallback) const;
    int64_t integer(const Json& object, const std::string& key, int64_t fallback) const;
    // A string holding exactly one character (Metaspace replacement, Strip content ...).
    char32_t character(const Json& object, const std::string& key) const;
    const Json& array(const Json& object, const std::string& key) const;
    std::string type(const Json& object) const;  // the "type" field

private:
    const std::string* file_;
    std::string path_;
};

// One piece of text moving through the pipeline. `at_start`: the piece begins at offset 0 of
// the original input (what Metaspace's prepend_scheme "first" tests).
struct Piece {
    std::string text;
    bool at_start = false;
};

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
    virtual std::string describe() const = 0;
};

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces `pieces` by their pre-tokens; empty pieces are dropped.
    virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
    virtual std::string describe() const = 0;
};

class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;
    // Appends the ids of one pre-token (non-empty, valid UTF-8) to `out`.
    virtual void tokenize(const std::string& piece, std::vector<int32_t>& out) const = 0;
    virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
    virtual const std::string* id_to_token(int32_t id) const = 0;
    virtual size_t size() const = 0;       // number of vocabulary entries
    virtual int32_t max_id() const = 0;    // -1 when empty
    virtual std::string type() const = 0;  // "BPE", "WordPiece", "WordLevel"
    virtual std::optional<std::string> unk_token() const = 0;
    virtual size_t merges() const { return 0; }
    virtual bool byte_fallback() const { return false; }
};

// Special tokens a post-processor puts around a sequence, by position.
struct TemplateEnds {
    std::vector<int32_t> before, after;
};

class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
    virtual TemplateEnds ends() const = 0;
    virtual std::string describe() const = 0;
};

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
    virtual std::string describe() const = 0;
};

// Factories: a JSON null gives nullptr (the stage is absent); an unknown "type" fails with
// "<component> type 'X' is not supported".
std::unique_ptr<Normalizer> make_normalizer(const Json& j, const JsonPath& at);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const JsonPath& at);
std::unique_ptr<TokenizerModel> make_model(const Json& j, const JsonPath& at);
std::unique_ptr<PostProcessor> make_post_processor(const Json& j, const JsonPath& at);
std::unique_ptr<Decoder> make_decoder(const Json& j, const JsonPath& at);

// A {"String": s} or {"Regex": r} "pattern" field (Replace, Split): sets `literal` or `regex`.
void parse_pattern(const Json& j, const JsonPath& at, std::string& literal, std::unique_ptr<TextRegex>& regex);

// GPT-2's reversible byte <-> printable character map (bytes_to_unicode in openai/gpt-2
// encoder.py): printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in order.
const std::string& byte_to_char_utf8(unsigned char b);
// The byte a character stands for, or -1.
int char_to_byte(char32_t c);

}  // namespace ql::text
