// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenizer a GGUF file describes (engine/loading/gguf_vocabulary.h) splits text as
// llama.cpp splits it for its tokenizer.ggml.pre (engine/loading/llama_pre_tokenizers.h): SmolLM's
// digits one by one, Llama 3's in threes, and the regex sequences of the other names; unknown
// names fall back with a warning; special ids and the chat template come along. (The real
// SmolLM2's tokens against llama.cpp's on the whole corpus: tests/app/cli_real_model_peer_test.cpp.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/loading/gguf_model.h"
#include "engine/loading/gguf_vocabulary.h"
#include "engine/loading/llama_pre_tokenizers.h"
#include "engine/loading/model_text.h"
#include "engine/text/tokenizer.h"
#include "engine/text/tokenizer_components.h"

namespace ql {
namespace {

// A byte-level vocabulary: the 256 byte symbols, a few merges, specials; tokenizer.ggml.pre `pre`.
GgufFile vocabulary_file(const std::string& path, const std::string& pre, const std::string& chat_template = "") {
    std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    std::vector<int32_t> types = {3, 3, 3};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(text::byte_to_char_utf8(static_cast<unsigned char>(b)));
        types.push_back(1);
    }
    // "Ġ 1" first: GPT-2's " 123" piece then merges to " 1" "2" "3", where Llama 3's split keeps
    // " " apart and "123" merges whole, and SmolLM's leaves every digit alone.
    const std::vector<std::string> merges = {"Ġ 1", "1 2", "12 3"};
    for (const std::string& m : merges) {
        tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
        types.push_back(1);
    }
    {
        GgufWriter w(path, true);
        w.add_metadata("general.architecture", GgufValue::string("llama"));
        w.add_metadata("tokenizer.ggml.model", GgufValue::string("gpt2"));
        w.add_metadata("tokenizer.ggml.pre", GgufValue::string(pre));
        w.add_metadata("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
        w.add_metadata("tokenizer.ggml.token_type", GgufValue::i32_array(types));
        w.add_metadata("tokenizer.ggml.merges", GgufValue::string_array(merges));
        w.add_metadata("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
        w.add_metadata("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
        w.add_metadata("tokenizer.ggml.eot_token_id", GgufValue::u32(0));
        if (!chat_template.empty()) w.add_metadata("tokenizer.chat_template", GgufValue::string(chat_template));
        w.commit();
    }
    return GgufFile::open(path);
}

std::vector<std::string> pieces(const GgufVocabulary& v, const std::string& text) {
    const Tokenizer t = Tokenizer::from_json(*v.tokenizer_json);
    std::vector<std::string> out;
    for (int32_t id : t.encode(text, false)) out.push_back(t.decode({id}));
    return out;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("quantlab-vocab-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(GgufVocabulary, SmollmSplitsEveryDigitAsLlamaCppDoes) {
    const std::string path = temp_path("smollm.gguf");
    const GgufVocabulary v = gguf_vocabulary(vocabulary_file(path, "smollm", "{{ bos_token }}"));
    EXPECT_TRUE(v.warnings.empty());
    const nlohmann::json pre = nlohmann::json::parse(*v.tokenizer_json)["pre_tokenizer"];
    EXPECT_EQ(pre["type"], "Sequence");
    EXPECT_EQ(pre["pretokenizers"][0]["type"], "Digits");
    EXPECT_EQ(pre["pretokenizers"][1]["type"], "ByteLevel");
    // "123" would merge into one token without the digit split.
    EXPECT_EQ(pieces(v, "x 123"), (std::vector<std::string>{"x", " ", "1", "2", "3"}));
    EXPECT_EQ(v.chat_template.value_or(""), "{{ bos_token }}");
    EXPECT_EQ(v.eot_id.value_or(-1), 0);
    const ModelText text = gguf_model_text(v, path);
    EXPECT_EQ(text.end_ids, (std::vector<int64_t>{2, 0}));
    EXPECT_EQ(text.bos_token, "<|im_start|>");
    EXPECT_EQ(text.chat_template_origin, path + ": tokenizer.chat_template");
    EXPECT_EQ(text.encode_prompt("1"), (std::vector<int64_t>{text.tokenizer->token_to_id("1").value()}))
        << "add_bos_token is unset and smollm's default is no BOS";
    std::filesystem::remove(path);
}

// What ptq / train / convert copy next to weights made from a GGUF: the folder's tokenizer,
// chat template and end ids are the file's, so a quantized checkpoint of a GGUF model can chat.
TEST(GgufVocabulary, TextFilesGiveTheFolderTheFilesTokenizerTemplateAndEnds) {
    const std::string path = temp_path("text-files.gguf");
    const GgufVocabulary v = gguf_vocabulary(vocabulary_file(path, "smollm", "{{ bos_token }}"));
    const std::string folder = temp_path("text-files");
    std::filesystem::create_directories(folder);
    const std::vector<std::string> written = write_gguf_text_files(v, 2048, folder);
    EXPECT_EQ(written, (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                                                 "generation_config.json"}));
    const ModelText from_file = gguf_model_text(v, path);
    const ModelText from_folder = hf_folder_text(folder, 262);
    EXPECT_EQ(from_folder.chat_template, "{{ bos_token }}");
    EXPECT_EQ(from_folder.chat_template_origin, folder + "/chat_template.jinja");
    EXPECT_EQ(from_folder.bos_token, "<|im_start|>");
    EXPECT_EQ(from_folder.encode_prompt("x 123"), from_file.encode_prompt("x 123"));
    const nlohmann::json generation = nlohmann::json::parse(std::ifstream(folder + "/generation_config.json"));
    EXPECT_EQ(generation["eos_token_id"], nlohmann::json::array({2, 0}));
    std::filesystem::remove_all(folder);
    std::filesystem::remove(path);
}

TEST(GgufVocabulary, GptTwoMergesDigitsAndLlamaThreeAddsBos) {
    const std::string path = temp_path("gpt2.gguf");
    const GgufVocabulary gpt2 = gguf_vocabulary(vocabulary_file(path, "gpt-2"));
    EXPECT_EQ(nlohmann::json::parse(*gpt2.tokenizer_json)["pre_tokenizer"]["type"], "ByteLevel");
    EXPECT_EQ(pieces(gpt2, "x 123"), (std::vector<std::string>{"x", " 1", "2", "3"}));
    const GgufVocabulary llama3 = gguf_vocabulary(vocabulary_file(path, "llama-bpe"));
    EXPECT_TRUE(llama3.add_bos) << "llama.cpp adds BOS for llama3 unless the file says otherwise";
    EXPECT_EQ(pieces(llama3, "x 123"), (std::vector<std::string>{"x", " ", "123"}));
    std::filesystem::remove(path);
}

TEST(GgufVocabulary, EveryListedPreTokenizerCompilesAndUnknownNamesWarn) {
    const std::string path = temp_path("pre.gguf");
    for (const char* name : {"default", "llama3", "qwen2", "qwen35", "deepseek-coder", "deepseek-v3", "falcon", "starcoder",
                             "poro-chat", "viking", "tekken", "gpt-4o", "seed-coder", "minicpm5", "laguna", "ufakzeka"}) {
        const LlamaPreTokenizer* pre = llama_pre_tokenizer(name);
        ASSERT_NE(pre, nullptr) << name;
        const GgufVocabulary v = gguf_vocabulary(vocabulary_file(path, name));
        EXPECT_TRUE(v.warnings.empty()) << name;
        EXPECT_FALSE(pieces(v, "Hello, World 2024!").empty()) << name;  // every regex compiles and runs
    }
    const GgufVocabulary unknown = gguf_vocabulary(vocabulary_file(path, "kimi-k2"));
    ASSERT_EQ(unknown.warnings.size(), 1u);
    EXPECT_NE(unknown.warnings[0].find("tokenizer.ggml.pre 'kimi-k2' is not one QuantLab knows"), std::string::npos);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace ql
