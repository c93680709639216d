// SPDX-License-Identifier: GPL-3.0-or-later
// Malformed tokenizer.json files: every failure is a ql::UserError naming the file and the
// field or component.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/tokenizer.h"

namespace ql {
namespace {

using nlohmann::json;

// A small valid byte-level BPE file to break one field at a time.
json base() {
    return json::parse(R"({
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
      "post_processor": null,
      "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
                "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4},
                "merges": [["a", "b"], ["ab", "c"]]}})");
}

// Expects a UserError whose message holds the file name and every fragment.
void expect_user_error(const std::string& text, std::initializer_list<const char*> fragments) {
    try {
        Tokenizer::from_json(text, "bad/tokenizer.json");
        FAIL() << "accepted: " << text.substr(0, 200);
    } catch (const UserError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("bad/tokenizer.json"), std::string::npos) << m;
        for (const char* f : fragments) EXPECT_NE(m.find(f), std::string::npos) << "missing '" << f << "' in: " << m;
    }
}

TEST(TokenizerErrors, TheBaseFileIsValid) {
    const Tokenizer t = Tokenizer::from_json(base().dump());
    EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{4}));
}

TEST(TokenizerErrors, NotJson) {
    expect_user_error("{\"model\": ", {"not valid JSON"});
    expect_user_error("", {"not valid JSON"});
    expect_user_error("[1, 2]", {"expected a JSON object"});
}

TEST(TokenizerErrors, MissingModel) {
    json j = base();
    j.erase("model");
    expect_user_error(j.dump(), {"'model'", "missing"});
    j = base();
    j["model"].erase("vocab");
    expect_user_error(j.dump(), {"model.vocab", "missing"});
    j = base();
    j["model"].erase("merges");
    expect_user_error(j.dump(), {"model.merges", "missing"});
}

TEST(TokenizerErrors, UnknownComponentTypesAreNamed) {
    json j = base();
    j["pre_tokenizer"] = {{"type", "Foo"}};
    expect_user_error(j.dump(), {"pre_tokenizer type 'Foo' is not supported"});
    j = base();
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}, {{"type", "UnicodeScripts"}}}}};
    expect_user_error(j.dump(), {"pre_tokenizer.pretokenizers[1].type", "pre_tokenizer type 'UnicodeScripts' is not supported"});
    j = base();
    j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
    expect_user_error(j.dump(), {"normalizer type 'Precompiled' is not supported"});
    j = base();
    j["decoder"] = {{"type", "CTC"}};
    expect_user_error(j.dump(), {"decoder type 'CTC' is not supported"});
    j = base();
    j["post_processor"] = {{"type", "Magic"}};
    expect_user_error(j.dump(), {"post_processor type 'Magic' is not supported"});
    j = base();
    j["model"]["type"] = "Unigram";
    expect_user_error(j.dump(), {"model type 'Unigram' is not supported"});
    j = base();
    j["normalizer"] = {{"lowercase", true}};
    expect_user_error(j.dump(), {"normalizer.type", "missing"});
}

TEST(TokenizerErrors, MergesReferencingUnknownTokens) {
    json j = base();
    j["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "zz"})});
    expect_user_error(j.dump(), {"model.merges[1]", "merge token 'zz' is not in the vocabulary"});
    j = base();
    j["model"]["merges"] = json::array({"a b", "b c"});  // "bc" is not in the vocabulary
    expect_user_error(j.dump(), {"model.merges[1]", "merged token 'bc' is not in the vocabulary"});
    j = base();
    j["model"]["merges"] = json::array({"a b c"});
    expect_user_error(j.dump(), {"model.merges[0]", "exactly one space"});
    j = base();
    j["model"]["merges"] = json::array({json::array({"a"})});
    expect_user_error(j.dump(), {"model.merges[0]"});
}

TEST(TokenizerErrors, BadVocabulary) {
    json j = base();
    j["model"]["vocab"]["d"] = -1;
    expect_user_error(j.dump(), {"model.vocab.d", "token id"});
    j = base();
    j["model"]["vocab"]["d"] = "7";
    expect_user_error(j.dump(), {"model.vocab.d"});
    j = base();
    j["model"]["vocab"] = json::array();
    expect_user_error(j.dump(), {"model.vocab", "expected an object"});
}

TEST(TokenizerErrors, BadRegex) {
    json j = base();
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(\\p{L}+"}}}, {"behavior", "Isolated"}, {"invert", false}};
    expect_user_error(j.dump(), {"pre_tokenizer.pattern.Regex", "invalid regular expression"});
    j = base();
    j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "[a-"}}}, {"content", "x"}};
    expect_user_error(j.dump(), {"normalizer.pattern.Regex", "invalid regular expression"});
    j = base();
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Glob", "*"}}}, {"behavior", "Isolated"}};
    expect_user_error(j.dump(), {"pre_tokenizer.pattern"});
    j = base();
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
    expect_user_error(j.dump(), {"pre_tokenizer.behavior", "Sideways"});
}

TEST(TokenizerErrors, BadFieldTypes) {
    json j = base();
    j["pre_tokenizer"]["add_prefix_space"] = "yes";
    expect_user_error(j.dump(), {"pre_tokenizer.add_prefix_space", "expected true or false"});
    j = base();
    j["added_tokens"] = {{{"id", 9}, {"special", true}}};
    expect_user_error(j.dump(), {"added_tokens[0].content", "missing"});
    j = base();
    j["added_tokens"] = {{{"id", -3}, {"content", "<s>"}}};
    expect_user_error(j.dump(), {"added_tokens[0].id"});
    j = base();
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}};
    expect_user_error(j.dump(), {"pre_tokenizer.replacement", "single character"});
    j = base();
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                           {"special_tokens", json::object()}};
    expect_user_error(j.dump(), {"post_processor.single[0].SpecialToken.id", "'<s>' is not in special_tokens"});
}

TEST(TokenizerErrors, MissingFileIsNamed) {
    try {
        Tokenizer::from_file("/nonexistent/quantlab/tokenizer.json");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/quantlab/tokenizer.json"), std::string::npos);
    }
}

TEST(TokenizerErrors, UnkTokenOutsideTheVocabularyFailsWhenNeeded) {
    json j = base();
    j["model"]["unk_token"] = "<unk>";
    const Tokenizer t = Tokenizer::from_json(j.dump(), "bad/tokenizer.json");
    EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{2}));
    try {
        t.encode("abz");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("model.unk_token"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ql
