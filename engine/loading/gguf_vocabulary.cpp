// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/gguf_vocabulary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/export/gguf_tokenizer_metadata.h"
#include "engine/loading/llama_pre_tokenizers.h"
#include "engine/text/tokenizer_components.h"
#include "engine/text/unicode_text.h"

namespace ql {
namespace {

using json = nlohmann::ordered_json;
// The token -> id maps: sorted (std::map), since an ordered_json object searches linearly on every
// insertion, which makes a real vocabulary of 49152 tokens take seconds to build. JSON objects are
// unordered: the tokenizer reads the same map either way.
using VocabJson = nlohmann::json;

class TokenizerKeys {
public:
    explicit TokenizerKeys(const GgufFile& f) : f_(f) {}
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw UserError(f_.path() + ": metadata '" + key + "': " + what);
    }
    const GgufValue* find(const std::string& key) const { return f_.find(key); }
    template <class Get>
    auto get(const std::string& key, const Get& get) const {
        try {
            return get(*f_.find(key));
        } catch (const UserError& e) {
            throw UserError(f_.path() + ": " + e.what());
        }
    }
    std::optional<int32_t> id(const std::string& key, int64_t tokens) const {
        const GgufValue* v = find(key);
        if (!v) return std::nullopt;
        const int64_t x = get(key, [&](const GgufValue& g) { return g.as_int(key); });
        // llama.cpp only warns and carries on with an id outside the vocabulary; generation would
        // then index with it, so a file that says so is refused.
        if (x < 0 || x >= tokens)
            fail(key, std::to_string(x) + " is outside the vocabulary of " + std::to_string(tokens) + " tokens");
        return static_cast<int32_t>(x);
    }
    bool flag(const std::string& key, bool fallback) const {
        const GgufValue* v = find(key);
        if (!v) return fallback;
        if (v->type != GgufValueType::BOOL) fail(key, std::string("expected BOOL, found ") + gguf_value_type_name(v->type));
        return v->u != 0;
    }

private:
    const GgufFile& f_;
};

// The tokenizer.json pre-tokenizer doing llama.cpp's splits: GPT-2's regex alone is ByteLevel's own
// split; smollm's is written as SmolLM's tokenizer.json has it (Digits(individual_digits) +
// ByteLevel, the same pieces); any other list as Split(regex, Isolated) per regex, in order, then
// ByteLevel without its regex (transformers' set_split_regex form).
json byte_level_pre_tokenizer(const LlamaPreTokenizer& pre) {
    auto byte_level = [](bool use_regex) {
        return json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
    };
    if (pre.regexes.size() == 1 && pre.regexes[0] == gpt2_split_regex()) return byte_level(true);
    if (pre.type == "smollm")
        return {{"type", "Sequence"},
                {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)})}};
    json list = json::array();
    for (const std::string& r : pre.regexes)
        list.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    list.push_back(byte_level(false));
    return {{"type", "Sequence"}, {"pretokenizers", list}};
}

bool is_demo_vocabulary(const std::vector<std::string>& tokens) {
    if (static_cast<int64_t>(tokens.size()) != synthetic_vocab::kSize) return false;
    for (int64_t i = 0; i < synthetic_vocab::kSize; ++i)
        if (tokens[static_cast<size_t>(i)] != synthetic_vocab::token_text(i)) return false;
    return true;
}

json added_token(int64_t id, const std::string& content, bool special) {
    return {{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
            {"rstrip", false},   {"normalized", false}, {"special", special}};
}

// transformers' byte_level_tokenizer: a token outside the byte-level alphabet (llama.cpp writes
// some added tokens as plain UTF-8) is respelled in it.
std::string byte_level_spelling(const std::string& token) {
    bool in_alphabet = true;
    for (size_t i = 0; i < token.size() && in_alphabet;) in_alphabet = text::char_to_byte(text::next_code_point(token, i)) >= 0;
    if (in_alphabet) return token;
    std::string out;
    for (unsigned char b : token) out += text::byte_to_char_utf8(b);
    return out;
}

size_t code_points(const std::string& s, size_t begin, size_t end) {
    size_t n = 0;
    for (size_t i = begin; i < end; ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    return n;
}

// transformers' generate_merges(vocab, vocab_scores) with vocab = {token: index} and
// vocab_scores = dict(zip(tokens, scores)) (Python dicts: a repeated token keeps its first
// position, its last index and its last score): every split of every token into two vocabulary
// tokens, ordered by the token's score (descending), then the lengths of the two pieces in code
// points (descending), ties in the order generated (token order, then (index of left, index of
// right) ascending).
json merges_from_scores(const std::vector<std::string>& tokens, const std::vector<float>& scores) {
    std::unordered_map<std::string, int64_t> index;
    std::unordered_map<std::string, float> score_of;
    std::vector<size_t> first_positions;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!index.count(tokens[i])) first_positions.push_back(i);
        index[tokens[i]] = static_cast<int64_t>(i);
        score_of[tokens[i]] = scores[i];
    }
    struct Merge {
        int64_t left, right;
        float score;
        size_t left_len, right_len;
    };
    std::vector<Merge> merges;
    for (size_t t : first_positions) {
        const std::string& s = tokens[t];
        std::vector<Merge> local;
        for (size_t cut = 1; cut < s.size(); ++cut) {
            if ((static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) continue;  // Python slices code points
            const auto l = index.find(s.substr(0, cut)), r = index.find(s.substr(cut));
            if (l == index.end() || r == index.end()) continue;
            local.push_back({l->second, r->second, score_of.at(s), code_points(s, 0, cut), code_points(s, cut, s.size())});
        }
        std::stable_sort(local.begin(), local.end(),
                         [](const Merge& a, const Merge& b) { return std::tie(a.left, a.right) < std::tie(b.left, b.right); });
        merges.insert(merges.end(), local.begin(), local.end());
    }
    // sorted(key=(score, len(l), len(r)), reverse=True) is stable: equal keys keep their order.
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        return std::tie(b.score, b.left_len, b.right_len) < std::tie(a.score, a.left_len, a.right_len);
    });
    json out = json::array();
    for (const Merge& m : merges)
        out.push_back(json::array({tokens[static_cast<size_t>(m.left)], tokens[static_cast<size_t>(m.right)]}));
    return out;
}

json split_merges(const std::vector<std::string>& merges, const TokenizerKeys& k) {
    json out = json::array();
    for (size_t i = 0; i < merges.size(); ++i) {
        const size_t sp = merges[i].find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == merges[i].size())
            k.fail("tokenizer.ggml.merges", "entry " + std::to_string(i) + " '" + merges[i] + "' is not \"a b\"");
        out.push_back(json::array({merges[i].substr(0, sp), merges[i].substr(sp + 1)}));
    }
    return out;
}

json plain_post_processor() {
    return {{"type", "TemplateProcessing"},
            {"single", json::array({{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"pair", json::array({{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
            {"special_tokens", json::object()}};
}

// llama.cpp's WPM vocabulary (tokenizer.ggml.model "bert", conversion/bert.py's phantom-space
// tokens) back as the WordPiece tokenizer.json transformers' BertTokenizerFast uses: "\u2581x" is
// the word-start piece "x", any other non-CONTROL token the continuation "##x"; BertNormalizer
// (lower-casing as tokenizer.ggml.normalizer.lowercase says, default true as llama.cpp's WPM
// tokenizer lower-cases), BertPreTokenizer, and [CLS] A [SEP] around a sequence when
// add_bos_token / add_eos_token say so (bos = [CLS], eos = [SEP]).
void bert_tokenizer_json(const std::vector<std::string>& tokens, const std::vector<int32_t>& types, const TokenizerKeys& k,
                         GgufVocabulary& v, json& tok) {
    static const std::string phantom = "\xe2\x96\x81";  // U+2581
    auto control = [&](size_t i) { return !types.empty() && types[i] == static_cast<int32_t>(GgufTokenType::Control); };
    VocabJson vocab = VocabJson::object();
    std::vector<std::string> pieces(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        pieces[i] = control(i) ? t : t.rfind(phantom, 0) == 0 ? t.substr(phantom.size()) : "##" + t;
        vocab[pieces[i]] = static_cast<int64_t>(i);  // last id wins, as a dict
    }
    for (size_t i = 0; i < tokens.size(); ++i)
        if (control(i)) tok["added_tokens"].push_back(added_token(static_cast<int64_t>(i), pieces[i], true));
    const auto unk = k.id("tokenizer.ggml.unknown_token_id", v.token_count);
    const auto pad = k.id("tokenizer.ggml.padding_token_id", v.token_count);
    const bool lowercase = k.flag("tokenizer.ggml.normalizer.lowercase", true);
    tok["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                         {"strip_accents", nullptr}, {"lowercase", lowercase}};
    tok["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
    const bool add_cls = k.flag("tokenizer.ggml.add_bos_token", true) && v.bos_id;
    const bool add_sep = k.flag("tokenizer.ggml.add_eos_token", true) && v.eos_id;
    json single = json::array(), pair = json::array(), specials = json::object();
    auto special = [&](int32_t id, int type_id) {
        const std::string& t = pieces[static_cast<size_t>(id)];
        specials[t] = {{"id", t}, {"ids", json::array({id})}, {"tokens", json::array({t})}};
        return json{{"SpecialToken", {{"id", t}, {"type_id", type_id}}}};
    };
    auto sequence = [](const char* id, int type_id) { return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}}; };
    if (add_cls) single.push_back(special(*v.bos_id, 0)), pair.push_back(special(*v.bos_id, 0));
    single.push_back(sequence("A", 0));
    pair.push_back(sequence("A", 0));
    if (add_sep) single.push_back(special(*v.eos_id, 0)), pair.push_back(special(*v.eos_id, 0));
    pair.push_back(sequence("B", 1));
    if (add_sep) pair.push_back(special(*v.eos_id, 1));
    tok["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
    tok["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
    tok["model"] = {{"type", "WordPiece"}, {"unk_token", unk ? pieces[static_cast<size_t>(*unk)] : std::string("[UNK]")},
                    {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", vocab}};
    if (pad) tok["padding"] = {{"strategy", "BatchLongest"}, {"direction", "Right"}, {"pad_to_multiple_of", nullptr},
                               {"pad_id", *pad}, {"pad_type_id", 0}, {"pad_token", pieces[static_cast<size_t>(*pad)]}};
}

}  // namespace

GgufVocabulary gguf_vocabulary(const GgufFile& f) {
    GgufVocabulary v;
    const TokenizerKeys k(f);
    const GgufValue* tokens_v = k.find("tokenizer.ggml.tokens");
    if (!tokens_v) {
        v.warnings.push_back(f.path() + ": no tokenizer.ggml.tokens: text data cannot be tokenized (token ids work)");
        return v;
    }
    const std::vector<std::string> tokens =
        k.get("tokenizer.ggml.tokens", [](const GgufValue& g) { return g.as_strings("tokenizer.ggml.tokens"); });
    v.token_count = static_cast<int64_t>(tokens.size());
    if (k.find("tokenizer.ggml.model"))
        v.model = k.get("tokenizer.ggml.model", [](const GgufValue& g) { return g.as_string("tokenizer.ggml.model"); });
    if (k.find("tokenizer.ggml.pre"))
        v.pre = k.get("tokenizer.ggml.pre", [](const GgufValue& g) { return g.as_string("tokenizer.ggml.pre"); });
    v.bos_id = k.id("tokenizer.ggml.bos_token_id", v.token_count);
    v.eos_id = k.id("tokenizer.ggml.eos_token_id", v.token_count);
    v.eot_id = k.id("tokenizer.ggml.eot_token_id", v.token_count);
    v.eom_id = k.id("tokenizer.ggml.eom_token_id", v.token_count);
    // The other special ids are checked too (gguf-py spells the separator "seperator").
    for (const char* key : {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                            "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.mask_token_id"})
        (void)k.id(key, v.token_count);
    if (k.find("tokenizer.chat_template"))
        v.chat_template = k.get("tokenizer.chat_template", [](const GgufValue& g) { return g.as_string("tokenizer.chat_template"); });
    std::vector<int32_t> types;
    if (k.find("tokenizer.ggml.token_type")) {
        types = k.get("tokenizer.ggml.token_type", [](const GgufValue& g) { return g.as_i32s("tokenizer.ggml.token_type"); });
        if (types.size() != tokens.size())
            k.fail("tokenizer.ggml.token_type", std::to_string(types.size()) + " entries for " + std::to_string(tokens.size()) + " tokens");
    }
    std::vector<std::string> merges;
    if (k.find("tokenizer.ggml.merges"))
        merges = k.get("tokenizer.ggml.merges", [](const GgufValue& g) { return g.as_strings("tokenizer.ggml.merges"); });
    const LlamaPreTokenizer* known_pre = v.model == "gpt2" ? llama_pre_tokenizer(v.pre) : nullptr;
    v.add_bos = k.flag("tokenizer.ggml.add_bos_token", v.model == "llama" || (known_pre && known_pre->add_bos));

    if (v.model == "gpt2" && merges.empty()) {
        if (is_demo_vocabulary(tokens)) {
            v.is_demo = true;
            return v;
        }
        v.warnings.push_back(f.path() + ": the vocabulary has no merges (placeholder or character tokens): text data cannot "
                                        "be tokenized (token ids work)");
        return v;
    }
    auto type_of = [&](size_t i) { return types.empty() ? static_cast<int32_t>(GgufTokenType::Normal) : types[i]; };
    json tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", json::array()},
                {"normalizer", nullptr}};
    VocabJson vocab = VocabJson::object();
    if (v.model == "gpt2") {
        bool ignore_merges = false;
        std::vector<std::string> spelled(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i) spelled[i] = byte_level_spelling(tokens[i]);
        for (size_t i = 0; i < spelled.size(); ++i) vocab[spelled[i]] = static_cast<int64_t>(i);  // last id wins, as a dict
        for (size_t i = 0; i < tokens.size(); ++i) {
            const int32_t t = type_of(i);
            // CONTROL tokens spelt outside the byte alphabet are llama.cpp mislabels (transformers
            // skips them); USER_DEFINED tokens are matched whole.
            if (t == static_cast<int32_t>(GgufTokenType::Control) && spelled[i] == tokens[i])
                tok["added_tokens"].push_back(added_token(static_cast<int64_t>(i), tokens[i], true));
            else if (t == static_cast<int32_t>(GgufTokenType::UserDefined))
                tok["added_tokens"].push_back(added_token(static_cast<int64_t>(i), tokens[i], false));
        }
        const LlamaPreTokenizer* pre = llama_pre_tokenizer(v.pre);
        if (!pre) {
            v.warnings.push_back(f.path() + ": tokenizer.ggml.pre '" + v.pre +
                                 "' is not one QuantLab knows; GPT-2's pre-tokenizer is used (text may split differently)");
            pre = llama_pre_tokenizer("gpt-2");
        }
        ignore_merges = pre->ignore_merges;
        tok["pre_tokenizer"] = byte_level_pre_tokenizer(*pre);
        tok["post_processor"] = plain_post_processor();
        tok["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
        tok["model"] = {{"type", "BPE"},          {"dropout", nullptr},     {"unk_token", nullptr},
                        {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                        {"byte_fallback", false}, {"ignore_merges", ignore_merges}, {"vocab", vocab},
                        {"merges", split_merges(merges, k)}};
    } else if (v.model == "llama") {
        for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = static_cast<int64_t>(i);  // last id wins, as a dict
        json merge_list;
        if (!merges.empty()) {
            merge_list = split_merges(merges, k);
        } else {
            if (!k.find("tokenizer.ggml.scores"))
                k.fail("tokenizer.ggml.scores", "missing: a sentencepiece vocabulary needs merges or scores");
            const std::vector<float> scores =
                k.get("tokenizer.ggml.scores", [](const GgufValue& g) { return g.as_f32s("tokenizer.ggml.scores"); });
            if (scores.size() != tokens.size())
                k.fail("tokenizer.ggml.scores", std::to_string(scores.size()) + " entries for " + std::to_string(tokens.size()) + " tokens");
            merge_list = merges_from_scores(tokens, scores);
        }
        // transformers' LlamaTokenizer: <unk>, <s>, </s> and every CONTROL token special.
        for (size_t i = 0; i < tokens.size(); ++i)
            if (type_of(i) == static_cast<int32_t>(GgufTokenType::Control) || type_of(i) == static_cast<int32_t>(GgufTokenType::Unknown))
                tok["added_tokens"].push_back(added_token(static_cast<int64_t>(i), tokens[i], true));
            else if (type_of(i) == static_cast<int32_t>(GgufTokenType::UserDefined))
                tok["added_tokens"].push_back(added_token(static_cast<int64_t>(i), tokens[i], false));
        const bool prefix = k.flag("tokenizer.ggml.add_space_prefix", true);
        tok["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", prefix ? "first" : "never"},
                                {"split", false}};
        tok["post_processor"] = plain_post_processor();
        json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                     {{"type", "ByteFallback"}},
                                     {{"type", "Fuse"}}});
        if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
        tok["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
        tok["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                        {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
                        {"vocab", vocab}, {"merges", merge_list}};
    } else if (v.model == "bert") {
        bert_tokenizer_json(tokens, types, k, v, tok);
    } else {
        v.warnings.push_back(f.path() + ": tokenizer.ggml.model '" + v.model +
                             "' is not supported (gpt2, llama, bert): text data cannot be tokenized (token ids work)");
        return v;
    }
    v.tokenizer_json = tok.dump();
    return v;
}

}  // namespace ql
