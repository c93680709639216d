// SPDX-License-Identifier: GPL-3.0-or-later
// Token ids against the reference Hugging Face libraries: tests/data/tokenizers/<name>/
// expected.json was produced by tokenizers 0.23.3 (cross-checked with transformers 5.24.0) from
// the tokenizer.json beside it by scripts/golden/make_tokenizer_golden.py. Real files: gpt2,
// minilm; the others are trained reproductions of each family's pipeline (see the script).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/text/tokenizer.h"

namespace ql {
namespace {

std::string folder(const std::string& name) { return std::string(QUANTLAB_TEST_DATA_DIR) + "/tokenizers/" + name; }

nlohmann::json expected(const std::string& name) {
    std::ifstream in(folder(name) + "/expected.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EncodesLikeTheReference) {
    const Tokenizer tok = Tokenizer::from_file(folder(GetParam()) + "/tokenizer.json");
    const auto e = expected(GetParam());
    ASSERT_GE(e["cases"].size(), 10u);
    for (const auto& c : e["cases"]) {
        const std::string text = c["text"];
        EXPECT_EQ(tok.encode(text, false), ids_of(c["ids"])) << GetParam() << " case " << c["name"];
        EXPECT_EQ(tok.encode(text, true), ids_of(c["ids_with_special"])) << GetParam() << " case " << c["name"];
    }
}

TEST_P(TokenizerGolden, DecodesLikeTheReference) {
    const Tokenizer tok = Tokenizer::from_file(folder(GetParam()) + "/tokenizer.json");
    for (const auto& c : expected(GetParam())["cases"]) {
        const auto ids = ids_of(c["ids_with_special"]);
        EXPECT_EQ(tok.decode(ids, false), c["decoded"].get<std::string>()) << GetParam() << " case " << c["name"];
        EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>()) << GetParam() << " case " << c["name"];
    }
}

TEST_P(TokenizerGolden, VocabularyLookupsMatchTheReference) {
    const Tokenizer tok = Tokenizer::from_file(folder(GetParam()) + "/tokenizer.json");
    const auto e = expected(GetParam());
    EXPECT_EQ(tok.vocab_size(), e["vocab_size_with_added"].get<size_t>());
    for (const auto& [token, id] : e["token_to_id"].items()) {
        const auto got = tok.token_to_id(token);
        if (id.is_null()) {
            EXPECT_FALSE(got.has_value()) << token;
        } else {
            ASSERT_TRUE(got.has_value()) << token;
            EXPECT_EQ(*got, id.get<int32_t>()) << token;
            EXPECT_EQ(tok.id_to_token(*got), token);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Families, TokenizerGolden,
                         ::testing::Values("gpt2", "minilm", "llama3-style", "qwen2-style", "smollm-style", "roberta-style",
                                           "llama2-style", "llama2-metaspace", "bert-cased-style", "zoo-wordlevel",
                                           "zoo-subword-bpe", "zoo-metaspace", "zoo-split-invert"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string n = info.param;
                             for (char& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

}  // namespace
}  // namespace ql
