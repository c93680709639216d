// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli generate, tokenize, logits and convert as users call them, on the shipped demo
// (which answers arithmetic) and the tiny golden models: the --json contract of docs/CLI.md,
// a quantized checkpoint compared token by token, prompts files, and the errors that name what is
// wrong. (The real SmolLM2 against transformers and llama.cpp: cli_real_model_peer_test.cpp.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "engine/io/npy_file.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kData = QUANTLAB_TEST_DATA_DIR;

TEST(CliGenerate, DemoAnswersAndAQuantizedCheckpointIsComparedTokenByToken) {
    const std::string dir = make_temp_dir();
    const CliResult ptq = run_cli({"ptq", "demo", "--recipe", "NF4", "--calib", "synthetic:arith", "--samples", "8", "--out", dir + "/nf4"});
    ASSERT_EQ(ptq.exit_code, 0) << ptq.err;
    const CliResult r = run_cli({"generate", "demo", "--compare", dir + "/nf4", "--prompt", "210+430=", "--prompt", "700*888=",
                                 "--max-tokens", "6", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["sampling"], "greedy");
    ASSERT_EQ(j["outputs"].size(), 4u);  // model by model, prompts in order within each
    const json& first = j["outputs"][0];
    EXPECT_EQ(first["prompt"], "210+430=");
    // The demo's layout (synthetic_tasks.cpp): 3 digits per operand and 4 in the answer, least
    // significant first, so 12 + 34 is asked as "210+430=" and 46 answers "6400".
    EXPECT_EQ(first["text"], "6400");
    EXPECT_EQ(first["stop_reason"], "end");
    EXPECT_EQ(first["tokens"].back(), 2);  // the demo's <eos>, listed but not in the text
    EXPECT_EQ(first["token_texts"].back(), "");
    EXPECT_EQ(first["first_divergence"], -1);
    EXPECT_EQ(j["outputs"][1]["prompt"], "700*888=");
    EXPECT_EQ(j["outputs"][1]["text"], "6500");  // 7 * 8, the multiplier in all three places
    for (int i : {2, 3}) {
        const json& q = j["outputs"][i];
        EXPECT_EQ(q["model"], dir + "/nf4");
        ASSERT_EQ(q["kl_to_reference"].size(), q["tokens"].size());
        ASSERT_EQ(q["alternatives"].size(), q["tokens"].size());
        EXPECT_EQ(q["alternatives"][0].size(), 5u);
        double kl = 0;
        for (const json& k : q["kl_to_reference"]) kl += k.get<double>();
        EXPECT_GT(kl, 0.0) << "NF4 weights should move the distributions";
        EXPECT_NEAR(q["mean_kl"].get<double>(), kl / static_cast<double>(q["tokens"].size()), 1e-12);
    }
    // Plain text output streams the answers and ends with the table.
    const CliResult text = run_cli({"generate", "demo", "--prompt", "210+430=", "--max-tokens", "5"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("6400"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("tok/s"), std::string::npos) << text.out;
    fs::remove_all(dir);
}

TEST(CliGenerate, PromptsFilesAndStopStrings) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/p.txt") << "210+430=\n\n700*888=\n";
    const json lines = json::parse(run_cli({"generate", "demo", "--prompts", dir + "/p.txt", "--max-tokens", "5", "--json"}).out);
    ASSERT_EQ(lines["outputs"].size(), 2u);
    EXPECT_EQ(lines["outputs"][1]["text"], "6500");
    const json stopped = json::parse(run_cli({"generate", "demo", "--prompt", "210+430=", "--stop", "0", "--json"}).out);
    EXPECT_EQ(stopped["outputs"][0]["text"], "64");  // "6400" cut before the stop string
    EXPECT_EQ(stopped["outputs"][0]["stop_reason"], "stop_string");
    std::ofstream(dir + "/bad.jsonl") << "{\"prompt\": \"1+1=\"}\n{\"prompt\": 3}\n";
    const CliResult bad = run_cli({"generate", "demo", "--prompts", dir + "/bad.jsonl"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find(dir + "/bad.jsonl:2: expected {\"prompt\": string}"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

TEST(CliGenerate, ErrorsNameWhatIsWrong) {
    auto error = [](const std::vector<std::string>& args) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.out;
        return r.err;
    };
    EXPECT_NE(error({"generate", "demo"}).find("give either --prompt TEXT or --prompts FILE"), std::string::npos);
    EXPECT_NE(error({"generate", "demo", "--prompt", "1+1=", "--chat"}).find("has no chat template"), std::string::npos);
    EXPECT_NE(error({"generate", kData + "/models/bert", "--prompt", "x"}).find("not a decoder"), std::string::npos);
    EXPECT_NE(error({"generate", "demo", "--prompt", "1+1=", "--temperature", "-1"}).find("temperature"), std::string::npos);
    EXPECT_NE(error({"generate", "demo", "--prompt", "1+1=", "--compare", kData + "/models/llama"}).find("has no tokenizer"),
              std::string::npos);
    EXPECT_NE(error({"convert", kData + "/models/llama/config.json", "--out", make_temp_dir() + "/x"}).find("config.json"),
              std::string::npos);
}

TEST(CliGenerate, TokenizeAndLogitsShowWhatTheModelReads) {
    const std::string dir = make_temp_dir();
    const CliResult t = run_cli({"tokenize", "demo", "--text", "12+34=", "--json", "--out", dir + "/ids.npy"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    const json ids = json::parse(t.out);
    ASSERT_EQ(ids["ids"].size(), 6u);  // the demo's characters
    EXPECT_EQ(ids["pieces"][2], "+");
    const NdArray a = read_npy(dir + "/ids.npy");
    NdArray batch = NdArray::zeros(DType::Int64, {1, 6});
    std::copy_n(a.as<int64_t>(), 6, batch.as<int64_t>());
    write_npy(dir + "/batch.npy", batch);
    const CliResult l = run_cli({"logits", "demo", "--ids", dir + "/batch.npy", "--out", dir + "/logits.npy"});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    const NdArray logits = read_npy(dir + "/logits.npy");
    EXPECT_EQ(logits.shape, (std::vector<int64_t>{1, 6, 48}));
    const CliResult bad = run_cli({"logits", "demo", "--ids", dir + "/logits.npy", "--out", dir + "/x.npy"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("token ids must be [batch, tokens]"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
