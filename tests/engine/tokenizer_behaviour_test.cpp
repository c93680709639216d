// SPDX-License-Identifier: GPL-3.0-or-later
// Edge cases and the facade: empty and blank input, byte fallback for unknown characters,
// over-long WordPiece words, ill-formed UTF-8, merge formats, special-token roles, threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/text/tokenizer.h"

namespace ql {
namespace {

using nlohmann::json;

Tokenizer load(const std::string& name) {
    return Tokenizer::from_file(std::string(QUANTLAB_TEST_DATA_DIR) + "/tokenizers/" + name + "/tokenizer.json");
}

std::vector<int32_t> ids(std::initializer_list<int32_t> v) { return v; }

TEST(TokenizerBehaviour, EmptyTextGivesOnlyTheTemplateTokens) {
    for (const char* name : {"gpt2", "minilm", "llama3-style", "llama2-style", "bert-cased-style", "roberta-style"}) {
        const Tokenizer t = load(name);
        EXPECT_TRUE(t.encode("", false).empty()) << name;
        EXPECT_EQ(t.decode({}), "") << name;
    }
    const Tokenizer bert = load("minilm");
    EXPECT_EQ(bert.encode("", true), ids({101, 102}));
    const Tokenizer llama = load("llama2-style");
    EXPECT_EQ(llama.encode("", true), ids({1}));
}

TEST(TokenizerBehaviour, OnlySpaces) {
    EXPECT_TRUE(load("minilm").encode("   \t \n", false).empty());  // BERT drops whitespace
    const Tokenizer gpt2 = load("gpt2");
    const auto v = gpt2.encode("     ", false);
    EXPECT_FALSE(v.empty());
    EXPECT_EQ(gpt2.decode(v), "     ");
}

TEST(TokenizerBehaviour, UnknownCharactersFallBackToBytes) {
    const Tokenizer t = load("llama2-style");
    EXPECT_TRUE(t.description().byte_fallback);
    // U+0F00 is not in the small vocabulary: its three UTF-8 bytes become <0xE0><0xBC><0x80>.
    const auto v = t.encode("\xE0\xBC\x80", false);
    ASSERT_EQ(v.size(), 4u);  // "▁" (prepended by the normalizer) then the three bytes
    EXPECT_EQ(v[1], *t.token_to_id("<0xE0>"));
    EXPECT_EQ(v[2], *t.token_to_id("<0xBC>"));
    EXPECT_EQ(v[3], *t.token_to_id("<0x80>"));
    EXPECT_EQ(t.decode(v), "\xE0\xBC\x80");
    // A lone byte token that is not UTF-8 decodes to U+FFFD.
    EXPECT_EQ(t.decode({*t.token_to_id("<0xE0>")}), "\xEF\xBF\xBD");
}

TEST(TokenizerBehaviour, WordLongerThanMaxInputCharsIsUnknown) {
    const Tokenizer t = load("bert-cased-style");  // max_input_chars_per_word = 20
    const int32_t unk = *t.special_ids().unk;
    EXPECT_EQ(t.encode("quantizedquantizedqua", false), ids({unk}));  // 21 characters
    // 20 characters: split into pieces (ids from the reference tokenizers 0.23.3).
    EXPECT_EQ(t.encode("quantizedquantizedqu", false), ids({349, 340, 187, 201, 183}));
    EXPECT_EQ(t.encode("quantizedquantizedqu quantizedquantizedqua", false), ids({349, 340, 187, 201, 183, unk}));
}

TEST(TokenizerBehaviour, IllFormedUtf8IsReplaced) {
    const Tokenizer t = load("gpt2");
    EXPECT_EQ(t.encode("a\xFF" "b", false), t.encode("a\xEF\xBF\xBD" "b", false));
    EXPECT_EQ(t.encode("\xE4\xB8", false), t.encode("\xEF\xBF\xBD", false));  // one U+FFFD per maximal subpart
    // Decoding a byte-level token that is half of a character gives U+FFFD, as from_utf8_lossy.
    const auto v = t.encode("\xF0\x9F\xA4\x97", false);  // U+1F917 is three byte-level tokens
    EXPECT_EQ(v, ids({8582, 97, 245}));
    EXPECT_EQ(t.decode({v[0]}), "\xEF\xBF\xBD");
    EXPECT_EQ(t.decode(v), "\xF0\x9F\xA4\x97");
}

TEST(TokenizerBehaviour, UnknownIdsAreSkippedWhenDecoding) {
    const Tokenizer t = load("gpt2");
    EXPECT_EQ(t.decode({15496, 999999, -1, 995}), "Hello world");
}

json tiny_bpe() {
    return json::parse(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4, "<unk>": 5},
                          "merges": ["#version: 0.2", "a b", "ab c"], "unk_token": "<unk>"}})");
}

TEST(TokenizerBehaviour, MergesInStringAndArrayForm) {
    json j = tiny_bpe();
    const Tokenizer legacy = Tokenizer::from_json(j.dump());
    j["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c"})});
    const Tokenizer arrays = Tokenizer::from_json(j.dump());
    for (const Tokenizer* t : {&legacy, &arrays}) {
        EXPECT_EQ(t->encode("abcab"), ids({4, 2}));
        EXPECT_EQ(t->description().merges, 2u);
        EXPECT_EQ(t->decode({4, 2}), "abc ab");  // no decoder: tokens joined by spaces
    }
}

TEST(TokenizerBehaviour, UnknownCharactersFuseOnlyWhenAsked) {
    json j = tiny_bpe();
    EXPECT_EQ(Tokenizer::from_json(j.dump()).encode("axyb"), ids({0, 5, 5, 1}));
    j["model"]["fuse_unk"] = true;
    EXPECT_EQ(Tokenizer::from_json(j.dump()).encode("axyb"), ids({0, 5, 1}));
}

TEST(TokenizerBehaviour, SubwordPrefixAndSuffix) {
    // A BPE with end-of-word suffix and the BPE decoder (the original subword-nmt convention).
    const json j = json::parse(R"({
      "pre_tokenizer": {"type": "WhitespaceSplit"},
      "decoder": {"type": "BPEDecoder", "suffix": "</w>"},
      "model": {"type": "BPE", "end_of_word_suffix": "</w>",
                "vocab": {"l": 0, "o": 1, "w</w>": 2, "lo": 3, "low</w>": 4, "o</w>": 5},
                "merges": ["l o", "lo w</w>"]}})");
    const Tokenizer t = Tokenizer::from_json(j.dump());
    EXPECT_EQ(t.encode("low lo"), ids({4, 0, 5}));
    EXPECT_EQ(t.decode({4, 0, 5}), "low lo");
}

TEST(TokenizerBehaviour, SpecialTokenRoles) {
    const Tokenizer bert = load("minilm");  // roles from tokenizer_config.json and the template
    EXPECT_EQ(bert.special_ids().cls, 101);
    EXPECT_EQ(bert.special_ids().sep, 102);
    EXPECT_EQ(bert.special_ids().pad, 0);
    EXPECT_EQ(bert.special_ids().unk, 100);
    EXPECT_EQ(bert.special_ids().mask, 103);
    EXPECT_TRUE(bert.is_special(101));
    EXPECT_FALSE(bert.is_special(2000));
    const Tokenizer gpt2 = load("gpt2");
    EXPECT_EQ(gpt2.special_ids().eos, 50256);
    const Tokenizer llama3 = load("llama3-style");
    EXPECT_EQ(llama3.special_ids().bos, llama3.token_to_id("<|begin_of_text|>"));
    EXPECT_EQ(llama3.special_ids().eos, llama3.token_to_id("<|end_of_text|>"));
    const Tokenizer llama2 = load("llama2-style");
    EXPECT_EQ(llama2.special_ids().bos, 1);
    EXPECT_EQ(llama2.special_ids().eos, 2);
    EXPECT_EQ(llama2.special_ids().unk, 0);
}

TEST(TokenizerBehaviour, DescriptionNamesTheComponents) {
    const Tokenizer llama3 = load("llama3-style");
    const auto& d = llama3.description();
    EXPECT_EQ(d.model_type, "BPE");
    EXPECT_EQ(d.normalizer, "none");
    EXPECT_NE(d.pre_tokenizer.find("Split("), std::string::npos);
    EXPECT_NE(d.pre_tokenizer.find("ByteLevel"), std::string::npos);
    EXPECT_EQ(d.decoder, "ByteLevel");
    EXPECT_EQ(d.special_tokens, 6u);
    const Tokenizer minilm = load("minilm");
    const auto& b = minilm.description();
    EXPECT_EQ(b.model_type, "WordPiece");
    EXPECT_EQ(b.model_vocab_size, 30522u);
    EXPECT_NE(b.normalizer.find("BertNormalizer"), std::string::npos);
    EXPECT_EQ(b.post_processor, "TemplateProcessing");
}

TEST(TokenizerBehaviour, EncodingFromSeveralThreadsAgrees) {
    const Tokenizer t = load("gpt2");
    std::string text;
    for (int k = 0; k < 200; ++k) text += "Quantization of word" + std::to_string(k) + " and more words. ";
    const auto want = t.encode(text);
    std::vector<std::vector<int32_t>> got(4);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) threads.emplace_back([&, k] { got[k] = t.encode(text); });
    for (auto& th : threads) th.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
}

}  // namespace
}  // namespace ql
