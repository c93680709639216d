// SPDX-License-Identifier: GPL-3.0-or-later
// WordPiece (tokenizers/src/models/wordpiece/mod.rs): greedy longest match from the left,
// continuation pieces carry the "##" prefix, a word with any unmatched rest or longer than
// max_input_chars_per_word becomes the unknown token. WordLevel: one id per whole pre-token.
#include <memory>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/unicode_text.h"
#include "engine/text/vocabulary.h"

namespace ql::text {
namespace {

class WordPieceModel final : public TokenizerModel {
public:
    WordPieceModel(const Json& j, const JsonPath& at)
        : file_(at.file()),
          vocab_(at.require(j, "vocab"), at / "vocab"),
          unk_(at.string(j, "unk_token", "[UNK]")),
          prefix_(at.string(j, "continuing_subword_prefix", "##")) {
        const int64_t max_chars = at.integer(j, "max_input_chars_per_word", 100);
        if (max_chars < 0) (at / "max_input_chars_per_word").fail("must not be negative");
        max_chars_ = static_cast<size_t>(max_chars);
    }

    void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
        size_t chars = 0;
        for (size_t i = 0; i < word.size(); ++i) chars += (static_cast<unsigned char>(word[i]) & 0xC0) != 0x80;
        if (chars > max_chars_) {
            out.push_back(unk_id());
            return;
        }
        const size_t mark = out.size();
        std::string candidate;
        size_t start = 0;
        while (start < word.size()) {
            size_t end = word.size();
            int32_t found = -1;
            while (start < end) {
                candidate.clear();
                if (start > 0) candidate += prefix_;
                candidate.append(word, start, end - start);
                found = vocab_.find(candidate);
                if (found >= 0) break;
                do {  // drop the last character
                    --end;
                } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
            }
            if (found < 0) {
                out.resize(mark);
                out.push_back(unk_id());
                return;
            }
            out.push_back(found);
            start = end;
        }
    }
    std::optional<int32_t> token_to_id(std::string_view token) const override { return vocab_.id(token); }
    const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
    size_t size() const override { return vocab_.size(); }
    int32_t max_id() const override { return vocab_.max_id(); }
    std::string type() const override { return "WordPiece"; }
    std::optional<std::string> unk_token() const override { return unk_; }

private:
    int32_t unk_id() const {
        const int32_t id = vocab_.find(unk_);
        if (id < 0) throw UserError(file_ + ": tokenizer.json field 'model.unk_token': '" + unk_ + "' is not in the vocabulary");
        return id;
    }

    std::string file_;
    Vocabulary vocab_;
    std::string unk_, prefix_;
    size_t max_chars_ = 100;
};

class WordLevelModel final : public TokenizerModel {
public:
    WordLevelModel(const Json& j, const JsonPath& at)
        : file_(at.file()), vocab_(at.require(j, "vocab"), at / "vocab"), unk_(at.optional_string(j, "unk_token")) {}

    void tokenize(const std::string& word, std::vector<int32_t>& out) const override {
        int32_t id = vocab_.find(word);
        if (id < 0 && unk_) id = vocab_.find(*unk_);
        if (id < 0)
            throw UserError(file_ + ": tokenizer.json field 'model.unk_token': needed for '" + word +
                            "', but missing or not in the vocabulary");
        out.push_back(id);
    }
    std::optional<int32_t> token_to_id(std::string_view token) const override { return vocab_.id(token); }
    const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
    size_t size() const override { return vocab_.size(); }
    int32_t max_id() const override { return vocab_.max_id(); }
    std::string type() const override { return "WordLevel"; }
    std::optional<std::string> unk_token() const override { return unk_; }

private:
    std::string file_;
    Vocabulary vocab_;
    std::optional<std::string> unk_;
};

}  // namespace

std::unique_ptr<TokenizerModel> make_wordpiece_model(const Json& j, const JsonPath& at) {
    return std::make_unique<WordPieceModel>(j, at);
}
std::unique_ptr<TokenizerModel> make_wordlevel_model(const Json& j, const JsonPath& at) {
    return std::make_unique<WordLevelModel>(j, at);
}

std::unique_ptr<TokenizerModel> make_model(const Json& j, const JsonPath& at) {
    if (!j.is_object()) at.fail("expected an object");
    std::string type;
    if (j.contains("type")) {
        type = at.type(j);
    } else if (j.contains("merges")) {  // files written before "type" was serialized
        type = "BPE";
    } else if (j.contains("continuing_subword_prefix") || j.contains("max_input_chars_per_word")) {
        type = "WordPiece";
    } else {
        (at / "type").fail("missing");
    }
    if (type == "BPE") return make_bpe_model(j, at);
    if (type == "WordPiece") return make_wordpiece_model(j, at);
    if (type == "WordLevel") return make_wordlevel_model(j, at);
    (at / "type").fail("model type '" + type + "' is not supported (supported: BPE, WordPiece, WordLevel)");
}

}  // namespace ql::text
