// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli inspect / eval on an HF folder (the golden tiny Llama of tests/data/models) with a
// tokenizer.json, text data and pre-tokenized files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/io/npy_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The golden Llama (vocab 128, 64 positions) with a word-level tokenizer of 7 words.
std::string make_model_folder(const std::string& dir) {
    const std::string model = dir + "/model";
    fs::create_directories(model);
    const std::string golden = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";
    fs::copy_file(golden + "/config.json", model + "/config.json");
    fs::copy_file(golden + "/model.safetensors", model + "/model.safetensors");
    const json tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens",
         {{{"id", 0}, {"content", "[UNK]"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
           {"normalized", false}, {"special", true}},
          {{"id", 1}, {"content", "<eos>"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
           {"normalized", false}, {"special", true}}}},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "Whitespace"}}},
        {"post_processor", nullptr},
        {"decoder", nullptr},
        {"model",
         {{"type", "WordLevel"},
          {"unk_token", "[UNK]"},
          {"vocab", {{"[UNK]", 0}, {"<eos>", 1}, {"the", 2}, {"cat", 3}, {"sat", 4}, {"on", 5}, {"mat", 6}}}}}};
    std::ofstream(model + "/tokenizer.json") << tokenizer.dump();
    std::ofstream(model + "/tokenizer_config.json") << json{{"eos_token", "<eos>"}}.dump();
    return model;
}

json run_hf_json(const std::vector<std::string>& args) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
}

TEST(CliEvalHf, TextThroughTheModelsTokenizer) {
    const std::string dir = make_temp_dir(), model = make_model_folder(dir);
    std::string text;
    for (int i = 0; i < 10; ++i) text += "the cat sat on the mat\n";
    std::ofstream(dir + "/story.txt") << text;
    // 60 words + <eos> = 61 tokens: 7 windows of 8 predictions.
    const json j = run_hf_json({"eval", model, "--data", dir + "/story.txt", "--seq-len", "8", "--json"});
    EXPECT_EQ(j["tokens"], 56);
    EXPECT_EQ(j["examples"], 7);
    EXPECT_TRUE(j["exact_match"].is_null());
    EXPECT_GT(j["ppl"].get<double>(), 1.0);
    const json v = run_hf_json({"eval", model, "--data", dir + "/story.txt", "--seq-len", "8", "--split", "validation",
                             "--teacher", model, "--json"});
    EXPECT_EQ(v["examples"], 1);
    EXPECT_NEAR(v["kl"].get<double>(), 0.0, 1e-6);
    EXPECT_DOUBLE_EQ(v["agreement"].get<double>(), 1.0);
    fs::remove_all(dir);
}

TEST(CliEvalHf, TokenFilesAndTheirErrors) {
    const std::string dir = make_temp_dir(), model = make_model_folder(dir);
    NdArray ids = NdArray::zeros(DType::Int64, {4, 17});
    for (int64_t i = 0; i < ids.numel(); ++i) ids.as<int64_t>()[i] = (i * 7) % 128;
    write_npy(dir + "/rows.npy", ids);
    const json j = run_hf_json({"eval", model, "--data", dir + "/rows.npy", "--json"});
    EXPECT_EQ(j["tokens"], 4 * 16);
    std::string bin;
    for (int i = 0; i < 65; ++i) bin += std::string{static_cast<char>(i), '\0'};
    std::ofstream(dir + "/train.bin", std::ios::binary) << bin;
    EXPECT_EQ(run_hf_json({"eval", model, "--data", dir + "/train.bin", "--seq-len", "16", "--json"})["tokens"], 64);
    ids.as<int64_t>()[5] = 128;
    write_npy(dir + "/bad.npy", ids);
    const CliResult bad = run_cli({"eval", model, "--data", dir + "/bad.npy"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("bad.npy: token 5 is 128"), std::string::npos) << bad.err;
    const CliResult long_rows = run_cli({"eval", model, "--data", dir + "/rows.npy", "--seq-len", "100"});
    EXPECT_EQ(long_rows.exit_code, 1);
    EXPECT_NE(long_rows.err.find("exceeds"), std::string::npos) << long_rows.err;
    fs::remove_all(dir);
}

TEST(CliEvalHf, InspectAnHfFolder) {
    const std::string dir = make_temp_dir(), model = make_model_folder(dir);
    const json j = run_hf_json({"inspect", model, "--json"});
    EXPECT_FALSE(j["demo"].get<bool>());
    EXPECT_EQ(j["config"]["vocab_size"], 128);
    EXPECT_FALSE(j["layers"].empty());
    const CliResult bad = run_cli({"inspect", dir});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("config.json"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
