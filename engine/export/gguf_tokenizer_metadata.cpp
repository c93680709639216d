// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_tokenizer_metadata.h"

#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/text/tokenizer.h"

namespace ql {
namespace {

using json = nlohmann::json;

json read_json(const std::string& path, const std::string& what) {
    const std::string text = read_whole_file(path, what);
    try {
        return parse_strict_json(text.data(), text.data() + text.size());
    } catch (const std::exception& e) {
        throw UserError(path + ": not valid JSON: " + e.what());
    }
}

bool exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

// config.json's special ids: an integer, or the first of a list; absent / null otherwise.
std::optional<int32_t> config_id(const json& config, const char* key) {
    const auto it = config.find(key);
    if (it == config.end()) return std::nullopt;
    if (it->is_number_integer()) return it->get<int32_t>();
    if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return (*it)[0].get<int32_t>();
    return std::nullopt;
}

// The pre-tokenizer name llama.cpp knows for this tokenizer.json (llama-vocab.cpp accepts
// "gpt-2", "llama-bpe", "qwen2", "default", ...; convert_hf_to_gguf picks one by hashing the
// tokenization of a test text; we recognise the split regexes those tokenizers declare).
std::string pre_tokenizer_name(const json& tok, std::vector<std::string>& warnings) {
    const std::string dump = tok.contains("pre_tokenizer") ? tok["pre_tokenizer"].dump() : "null";
    if (dump.find(R"(\\p{N}{1,3})") != std::string::npos) return "llama-bpe";  // Llama 3
    if (dump.find(R"(\\p{L}+|\\p{N}|)") != std::string::npos) return "qwen2";    // single digits
    const auto& pre = tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : json();
    if (pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true)) return "gpt-2";
    // SmolLM: Digits(individual_digits) then GPT-2's ByteLevel split (llama.cpp's "smollm").
    if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
        pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2) {
        const json& digits = pre["pretokenizers"][0];
        const json& bytes = pre["pretokenizers"][1];
        if (digits.is_object() && digits.value("type", "") == "Digits" && digits.value("individual_digits", false) &&
            bytes.is_object() && bytes.value("type", "") == "ByteLevel" && bytes.value("use_regex", true))
            return "smollm";
    }
    warnings.push_back("tokenizer.json: pre-tokenizer not recognised; GGUF tokenizer.ggml.pre = \"default\" "
                       "(llama.cpp may split text differently from the original tokenizer)");
    return "default";
}

std::vector<std::string> merges_of(const json& model, const std::string& file) {
    std::vector<std::string> out;
    const auto it = model.find("merges");
    if (it == model.end()) return out;
    if (!it->is_array()) throw UserError(file + ": model.merges: expected an array");
    for (const auto& m : *it) {
        if (m.is_string())
            out.push_back(m.get<std::string>());
        else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
            out.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        else
            throw UserError(file + ": model.merges: expected \"a b\" strings or [a, b] pairs");
    }
    return out;
}

struct TokenTable {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
};

TokenTable pad_table(int64_t vocab_size) {
    TokenTable t;
    t.tokens.resize(static_cast<size_t>(vocab_size));
    t.types.assign(static_cast<size_t>(vocab_size), static_cast<int32_t>(GgufTokenType::Unused));
    return t;
}

void fill_pads(TokenTable& t) {
    for (size_t i = 0; i < t.tokens.size(); ++i)
        if (t.tokens[i].empty()) {
            t.tokens[i] = "[PAD" + std::to_string(i) + "]";
            t.types[i] = static_cast<int32_t>(GgufTokenType::Unused);
        }
}

void put_special_ids(GgufMetadata& md, const SpecialTokenIds& ids, int64_t vocab_size) {
    auto put = [&](const char* key, const std::optional<int32_t>& id) {
        if (id && *id >= 0 && *id < vocab_size) md.emplace_back(key, GgufValue::u32(static_cast<uint32_t>(*id)));
    };
    put("tokenizer.ggml.bos_token_id", ids.bos);
    put("tokenizer.ggml.eos_token_id", ids.eos);
    put("tokenizer.ggml.unknown_token_id", ids.unk);
    put("tokenizer.ggml.seperator_token_id", ids.sep);  // sic: llama.cpp's key is spelt so
    put("tokenizer.ggml.padding_token_id", ids.pad);
    put("tokenizer.ggml.cls_token_id", ids.cls);
    put("tokenizer.ggml.mask_token_id", ids.mask);
}

// BERT's WordPiece vocabulary as conversion/bert.py BertModel.set_vocab writes it: the tokens in id
// order (get_vocab_base: added special tokens CONTROL, other added tokens USER_DEFINED, the rest
// NORMAL, missing ids "[PADn]" UNUSED), turned into llama.cpp's "phantom space" form (CONTROL
// tokens unchanged, "##piece" -> "piece", every other token "\u2581" + token), model "bert", the
// special ids gguf-py SpecialVocab takes from the BERT post-processor ([CLS] is bos, [SEP] eos;
// both added; no cls_token_id key), and the normalizer's lower-casing
// (SpecialVocab._parse_normalizer: tokenizer.ggml.normalizer.lowercase).
GgufTokenizerMetadata from_wordpiece(const json& tok, const Tokenizer& tokenizer, const std::string& file, int64_t vocab_size) {
    GgufTokenizerMetadata r;
    r.source = "tokenizer.json";
    const json& model = tok.at("model");
    TokenTable t = pad_table(vocab_size);
    for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
        if (!it.value().is_number_integer()) throw UserError(file + ": model.vocab['" + it.key() + "']: expected an integer id");
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || id >= vocab_size) continue;
        t.tokens[static_cast<size_t>(id)] = it.key();
        t.types[static_cast<size_t>(id)] = static_cast<int32_t>(GgufTokenType::Normal);
    }
    if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
        for (const auto& a : tok["added_tokens"]) {
            const int64_t id = a.value("id", int64_t{-1});
            if (id < 0 || id >= vocab_size) continue;
            t.tokens[static_cast<size_t>(id)] = a.value("content", "");
            t.types[static_cast<size_t>(id)] =
                static_cast<int32_t>(a.value("special", false) ? GgufTokenType::Control : GgufTokenType::UserDefined);
        }
    fill_pads(t);
    for (size_t i = 0; i < t.tokens.size(); ++i) {
        std::string& s = t.tokens[i];
        if (t.types[i] == static_cast<int32_t>(GgufTokenType::Control)) continue;
        s = s.rfind("##", 0) == 0 ? s.substr(2) : "\xe2\x96\x81" + s;  // U+2581 LOWER ONE EIGHTH BLOCK
    }
    const json& normalizer = tok.contains("normalizer") ? tok["normalizer"] : json();
    const bool bert_normalizer = normalizer.is_object() && normalizer.value("type", "") == "BertNormalizer";
    const bool lowercase = bert_normalizer && normalizer.value("lowercase", true);
    const bool bert_pre = tok.contains("pre_tokenizer") && tok["pre_tokenizer"].is_object() &&
                          tok["pre_tokenizer"].value("type", "") == "BertPreTokenizer";
    // convert_hf_to_gguf.py names the pre-tokenizer by hashing a test text's tokens; uncased BERT
    // vocabularies (bert-base-uncased, MiniLM, bge) hash to "jina-v2-en". llama.cpp's WPM tokenizer
    // does its own BERT pre-tokenization whatever the name.
    std::string pre = "default";
    if (lowercase && bert_pre)
        pre = "jina-v2-en";
    else
        r.warnings.push_back(file + ": not an uncased BERT tokenizer (BertNormalizer lowercase + BertPreTokenizer): "
                                    "tokenizer.ggml.pre = \"default\"; llama.cpp's WPM tokenizer lower-cases and splits as BERT does");
    GgufMetadata& md = r.metadata;
    md.emplace_back("tokenizer.ggml.model", GgufValue::string("bert"));
    md.emplace_back("tokenizer.ggml.pre", GgufValue::string(pre));
    md.emplace_back("tokenizer.ggml.tokens", GgufValue::string_array(t.tokens));
    md.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array(t.types));
    const SpecialTokenIds& special = tokenizer.special_ids();
    SpecialTokenIds ids;
    ids.bos = special.cls;
    ids.eos = special.sep;
    ids.unk = special.unk;
    ids.sep = special.sep;
    ids.pad = special.pad;
    ids.mask = special.mask;
    put_special_ids(md, ids, vocab_size);
    const std::vector<int32_t> plain = tokenizer.encode("a", false), with = tokenizer.encode("a", true);
    const bool adds_cls = with.size() > plain.size() && special.cls && with.front() == *special.cls;
    const bool adds_sep = with.size() > plain.size() && special.sep && with.back() == *special.sep;
    md.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(adds_cls));
    md.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::boolean(adds_sep));
    md.emplace_back("tokenizer.ggml.add_sep_token", GgufValue::boolean(false));  // SpecialVocab: only RobertaProcessing sets it
    if (bert_normalizer) md.emplace_back("tokenizer.ggml.normalizer.lowercase", GgufValue::boolean(lowercase));
    return r;
}

GgufTokenizerMetadata from_tokenizer_json(const std::string& folder, int64_t vocab_size) {
    const std::string file = folder + "/tokenizer.json";
    GgufTokenizerMetadata r;
    r.source = "tokenizer.json";
    const json tok = read_json(file, "tokenizer");
    const Tokenizer tokenizer = Tokenizer::from_file(file);  // validates and gives the special ids
    if (static_cast<int64_t>(tokenizer.vocab_size()) > vocab_size)
        throw UserError(file + ": defines " + std::to_string(tokenizer.vocab_size()) + " tokens but the model's embedding has " +
                        std::to_string(vocab_size) + " rows");
    const json& model = tok.at("model");
    const std::string type = model.value("type", "");
    if (type == "WordPiece") return from_wordpiece(tok, tokenizer, file, vocab_size);
    if (type != "BPE")
        throw UserError(file + ": model type '" + type +
                        "': GGUF export supports BPE tokenizers (byte-level or byte-fallback) and BERT's WordPiece");
    const bool spm = model.value("byte_fallback", false);

    TokenTable t = pad_table(vocab_size);
    for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || id >= vocab_size) continue;
        t.tokens[static_cast<size_t>(id)] = it.key();
        const bool byte = spm && std::regex_match(it.key(), std::regex("<0x[0-9A-Fa-f]{2}>"));
        t.types[static_cast<size_t>(id)] = static_cast<int32_t>(byte ? GgufTokenType::Byte : GgufTokenType::Normal);
    }
    if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
        for (const auto& a : tok["added_tokens"]) {
            const int64_t id = a.value("id", int64_t{-1});
            if (id < 0 || id >= vocab_size) continue;
            t.tokens[static_cast<size_t>(id)] = a.value("content", "");
            t.types[static_cast<size_t>(id)] =
                static_cast<int32_t>(a.value("special", false) ? GgufTokenType::Control : GgufTokenType::UserDefined);
        }
    const auto& special = tokenizer.special_ids();
    if (spm && special.unk && *special.unk >= 0 && *special.unk < vocab_size)
        t.types[static_cast<size_t>(*special.unk)] = static_cast<int32_t>(GgufTokenType::Unknown);
    fill_pads(t);

    GgufMetadata& md = r.metadata;
    if (spm) {
        md.emplace_back("tokenizer.ggml.model", GgufValue::string("llama"));
        md.emplace_back("tokenizer.ggml.pre", GgufValue::string("default"));
    } else {
        md.emplace_back("tokenizer.ggml.model", GgufValue::string("gpt2"));
        md.emplace_back("tokenizer.ggml.pre", GgufValue::string(pre_tokenizer_name(tok, r.warnings)));
    }
    md.emplace_back("tokenizer.ggml.tokens", GgufValue::string_array(t.tokens));
    if (spm) md.emplace_back("tokenizer.ggml.scores", GgufValue::f32_array(std::vector<float>(t.tokens.size(), -1000.0f)));
    md.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array(t.types));
    if (!spm) md.emplace_back("tokenizer.ggml.merges", GgufValue::string_array(merges_of(model, file)));
    put_special_ids(md, special, vocab_size);
    // What the post-processor adds around a sequence.
    const std::vector<int32_t> plain = tokenizer.encode("a", false), with = tokenizer.encode("a", true);
    const bool adds_bos = with.size() > plain.size() && special.bos && with.front() == *special.bos;
    const bool adds_eos = with.size() > plain.size() && special.eos && with.back() == *special.eos;
    md.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(adds_bos));
    md.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::boolean(adds_eos));
    return r;
}

// Tokens without merges (the demo's characters, placeholders): a "gpt2" vocabulary, so that
// llama.cpp loads it; angle-bracketed names are control tokens, "<reservedN>" unused.
GgufTokenizerMetadata plain_vocabulary(std::vector<std::string> tokens, int64_t vocab_size, const json& config,
                                       const std::string& source) {
    GgufTokenizerMetadata r;
    r.source = source;
    TokenTable t = pad_table(vocab_size);
    for (size_t i = 0; i < tokens.size() && static_cast<int64_t>(i) < vocab_size; ++i) {
        const std::string& s = tokens[i];
        t.tokens[i] = s;
        const bool angled = s.size() > 2 && s.front() == '<' && s.back() == '>';
        t.types[i] = static_cast<int32_t>(s.rfind("<reserved", 0) == 0 ? GgufTokenType::Unused
                                          : angled && source != "placeholder" ? GgufTokenType::Control
                                                                              : GgufTokenType::Normal);
    }
    fill_pads(t);
    GgufMetadata& md = r.metadata;
    md.emplace_back("tokenizer.ggml.model", GgufValue::string("gpt2"));
    md.emplace_back("tokenizer.ggml.pre", GgufValue::string("default"));
    md.emplace_back("tokenizer.ggml.tokens", GgufValue::string_array(t.tokens));
    md.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array(t.types));
    md.emplace_back("tokenizer.ggml.merges", GgufValue::string_array({}));
    SpecialTokenIds ids;
    ids.bos = config_id(config, "bos_token_id");
    ids.eos = config_id(config, "eos_token_id");
    ids.pad = config_id(config, "pad_token_id");
    put_special_ids(md, ids, vocab_size);
    md.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
    return r;
}

}  // namespace

GgufTokenizerMetadata gguf_tokenizer_metadata(const std::string& folder, int64_t vocab_size) {
    if (exists(folder + "/tokenizer.json")) return from_tokenizer_json(folder, vocab_size);
    const json config = exists(folder + "/config.json") ? read_json(folder + "/config.json", "config") : json::object();
    if (exists(folder + "/quantlab.json")) {
        const json q = read_json(folder + "/quantlab.json", "QuantLab model description");
        if (q.contains("tokens") && q["tokens"].is_array()) {
            std::vector<std::string> tokens;
            for (const auto& s : q["tokens"]) {
                if (!s.is_string()) throw UserError(folder + "/quantlab.json: tokens: expected strings");
                tokens.push_back(s.get<std::string>());
            }
            return plain_vocabulary(std::move(tokens), vocab_size, config, "quantlab.json");
        }
    }
    std::vector<std::string> tokens;
    for (int64_t i = 0; i < vocab_size; ++i) tokens.push_back("<token_" + std::to_string(i) + ">");
    GgufTokenizerMetadata r = plain_vocabulary(std::move(tokens), vocab_size, config, "placeholder");
    r.warnings.push_back(folder + ": no tokenizer.json: the GGUF file gets placeholder tokens <token_N> "
                                  "(llama.cpp can run it on token ids, not tokenize text)");
    return r;
}

}  // namespace ql
