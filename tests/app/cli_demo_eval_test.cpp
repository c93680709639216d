// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli demo / eval / inspect as users run them: "demo" is the shipped model (no cache
// needed); a demo retrained for a few steps (the hidden --steps option) into a private XDG cache
// checks retraining, its record, and that a retrained model is opened only by its path.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/api/demo_api.h"
#include "engine/io/sha256.h"
#include "tests/app/cli_runner.h"
#include "tests/app/cli_test_demo.h"
#include "tests/build_paths.h"

extern char** environ;

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string shipped_dir() { return std::string(QUANTLAB_SOURCE_DIR) + "/resources/demo"; }

// The retrained demo of the tests that need one: tests/app/cli_test_demo.h.
class CliDemoEval : public ::testing::Test {
protected:
    static std::string cache() { return cli_test_cache(); }
    static std::string demo_dir() { return cli_test_demo_dir(); }
    void SetUp() override { setenv("XDG_CACHE_HOME", cache().c_str(), 1); }
    static void ensure_retrained() { ensure_cli_test_demo(); }
    static json run_json(const std::vector<std::string>& args) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return json::parse(r.out);
    }
};

TEST_F(CliDemoEval, TheShippedDemoNeedsNoCache) {
    const std::string empty = make_temp_dir();
    setenv("XDG_CACHE_HOME", empty.c_str(), 1);
    const json d = run_json({"demo", "--json"});
    EXPECT_TRUE(d["shipped"].get<bool>());
    EXPECT_TRUE(d["cached"].get<bool>());
    EXPECT_TRUE(d["seconds"].is_null());
    EXPECT_EQ(d["path"], shipped_dir());
    EXPECT_EQ(d["steps"], 10000);  // the full schedule, demo_training_config() (docs/DATA.md)
    EXPECT_GE(d["exact_match"].get<double>(), 0.99);
    EXPECT_NE(d["command"].get<std::string>().find("quantlab-cli demo"), std::string::npos);
    EXPECT_NE(d["trained_on"].get<std::string>().find("hardware threads"), std::string::npos);
    const json e = run_json({"eval", "demo", "--data", "synthetic:arith", "--samples", "30", "--json"});
    EXPECT_EQ(e["model"], shipped_dir());
    const CliResult text = run_cli({"demo"});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("shipped with QuantLab"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("trained on"), std::string::npos) << text.out;
    EXPECT_FALSE(fs::exists(empty + "/quantlab")) << "nothing is written to the cache";
    fs::remove_all(empty);
}

// The check, as a user types it: the default 1500 held-out problems of every operation.
TEST_F(CliDemoEval, TheShippedDemoSolvesAtLeast99PercentOfHeldOutProblems) {
    const json j = run_json({"eval", "demo", "--data", "synthetic:arith", "--json"});
    EXPECT_EQ(j["domains"]["+"]["examples"].get<int64_t>() + j["domains"]["-"]["examples"].get<int64_t>() +
                  j["domains"]["*"]["examples"].get<int64_t>(),
              1500);
    EXPECT_GE(j["exact_match"].get<double>(), 0.99);
    for (const char* op : {"+", "-", "*"}) EXPECT_GE(j["domains"][op]["exact_match"].get<double>(), 0.97) << op;
}

TEST_F(CliDemoEval, RetrainWritesTheCacheRecordsHowAndIsOpenedOnlyByItsPath) {
    ensure_retrained();
    for (const char* f : {"config.json", "model.safetensors", "quantlab.json"})
        EXPECT_TRUE(fs::exists(demo_dir() + "/" + f)) << f;
    // --out without --retrain keeps a complete model.
    const json again = run_json({"demo", "--out", demo_dir(), "--json"});
    EXPECT_TRUE(again["cached"].get<bool>());
    EXPECT_FALSE(again["shipped"].get<bool>());
    EXPECT_EQ(again["path"], demo_dir());
    EXPECT_EQ(again["steps"], 3);
    EXPECT_GT(again["parameter_count"].get<int64_t>(), 1000000);
    EXPECT_EQ(again["domains"].size(), 3u);
    EXPECT_EQ(again["command"], "quantlab-cli demo --retrain --steps 3 --json");
    const json record = json::parse(slurp(demo_dir() + "/quantlab.json"));
    EXPECT_FALSE(record["trained_on"]["cpu"].get<std::string>().empty());
    EXPECT_GT(record["trained_on"]["hardware_threads"].get<int>(), 0);
    EXPECT_EQ(record["files"]["model.safetensors"]["sha256"], sha256_file_hex(demo_dir() + "/model.safetensors"));
    EXPECT_EQ(record["files"]["config.json"]["bytes"].get<uint64_t>(), fs::file_size(demo_dir() + "/config.json"));
    EXPECT_NO_THROW(verify_demo_files(demo_dir()));
    // A retrained model in the cache does not replace the shipped one.
    EXPECT_EQ(run_json({"eval", "demo", "--data", "synthetic:arith:+", "--samples", "3", "--json"})["model"], shipped_dir());
    EXPECT_EQ(run_json({"eval", demo_dir(), "--data", "synthetic:arith:+", "--samples", "3", "--json"})["model"], demo_dir());
}

TEST_F(CliDemoEval, EvalJsonHasTheDocumentedKeysAndDomains) {
    const json j = run_json({"eval", "demo", "--data", "synthetic:arith", "--samples", "30", "--json"});
    for (const char* key : {"loss", "ppl", "exact_match", "accuracy", "kl", "agreement", "tokens", "seconds", "domains"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j["loss"].is_number());
    EXPECT_NEAR(j["ppl"].get<double>(), std::exp(j["loss"].get<double>()), 1e-6 * j["ppl"].get<double>());
    EXPECT_GE(j["exact_match"].get<double>(), 0.0);
    EXPECT_LE(j["exact_match"].get<double>(), 1.0);
    EXPECT_TRUE(j["accuracy"].is_null());
    EXPECT_TRUE(j["kl"].is_null());
    EXPECT_TRUE(j["agreement"].is_null());
    EXPECT_EQ(j["tokens"], 30 * 5);
    EXPECT_EQ(j["split"], "validation");
    for (const char* op : {"+", "-", "*"}) {
        ASSERT_TRUE(j["domains"].contains(op)) << op;
        EXPECT_EQ(j["domains"][op]["examples"], 10);
    }
}

TEST_F(CliDemoEval, TeacherKlAndAgreement) {
    const json j = run_json({"eval", "demo", "--data", "synthetic:arith:*", "--teacher", "demo", "--samples", "12", "--json"});
    EXPECT_NEAR(j["kl"].get<double>(), 0.0, 1e-6);
    EXPECT_DOUBLE_EQ(j["agreement"].get<double>(), 1.0);
    EXPECT_EQ(j["domains"].size(), 1u);
    const CliResult text = run_cli({"eval", "demo", "--data", "synthetic:arith:*", "--teacher", "demo", "--samples", "12"});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("top-1 agreement"), std::string::npos) << text.out;
}

TEST_F(CliDemoEval, RandomTokensTextAndFolderModels) {
    ensure_retrained();
    const json r = run_json({"eval", "demo", "--data", "synthetic:random-tokens", "--samples", "4", "--json"});
    EXPECT_TRUE(r["exact_match"].is_null());
    EXPECT_EQ(r["tokens"], 4 * 32);  // the demo's 32 positions
    EXPECT_TRUE(r["domains"].empty());

    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/sums.txt") << "123+456=975\n321-123=891\n";
    const json t = run_json({"eval", "demo", "--data", dir + "/sums.txt", "--seq-len", "8", "--json"});
    EXPECT_EQ(t["tokens"], 16);  // 22 characters + <eos> -> 2 windows of 8 predictions
    EXPECT_EQ(t["split"], "all");
    std::ofstream(dir + "/bad.txt") << "HELLO";
    const CliResult bad = run_cli({"eval", "demo", "--data", dir + "/bad.txt"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("bad.txt: line 1, column 1"), std::string::npos) << bad.err;

    // A model folder given by path (a retrained demo) works like "demo".
    const json f = run_json({"eval", demo_dir(), "--data", "synthetic:arith:+", "--samples", "6", "--json"});
    EXPECT_EQ(f["model"], demo_dir());
    fs::remove_all(dir);
}

TEST_F(CliDemoEval, InspectListsLayersAndCounts) {
    const json j = run_json({"inspect", "demo", "--json"});
    EXPECT_EQ(j["architecture"], "llama");
    EXPECT_TRUE(j["demo"].get<bool>());
    const json d = run_json({"demo", "--json"});
    EXPECT_EQ(j["parameter_count"], d["parameter_count"]);
    int64_t sum = 0;
    for (const auto& p : j["parameters"]) sum += p["numel"].get<int64_t>();
    EXPECT_EQ(sum, j["parameter_count"].get<int64_t>());
    bool q_proj = false, head = false;
    for (const auto& l : j["layers"]) {
        q_proj |= l["name"] == "model.layers.0.self_attn.q_proj";
        head |= l["name"] == "lm_head";
    }
    EXPECT_TRUE(q_proj);
    EXPECT_TRUE(head);
    const CliResult text = run_cli({"inspect", "demo"});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.out.find("model.layers.2.mlp.down_proj"), std::string::npos) << text.out;
}

TEST_F(CliDemoEval, OutWritesElsewhere) {
    const std::string out = make_temp_dir() + "/my-demo";
    const json j = run_json({"demo", "--out", out, "--steps", "2", "--json"});
    EXPECT_EQ(j["path"], out);
    EXPECT_FALSE(j["cached"].get<bool>());
    EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
    EXPECT_FALSE(fs::exists(out + ".partial"));
    fs::remove_all(fs::path(out).parent_path());
}

TEST_F(CliDemoEval, BadArgumentsAreUserErrors) {
    struct Case {
        std::vector<std::string> args;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {{"eval", "demo"}, "missing required option --data"},
        {{"eval", "--data", "synthetic:arith"}, "missing MODEL"},
        {{"eval", "demo", "--data", "synthetic:nope"}, "data 'synthetic:nope'"},
        {{"eval", "demo", "--data", "/no/such.txt"}, "/no/such.txt"},
        {{"eval", "/no/model", "--data", "synthetic:arith"}, "/no/model"},
        {{"eval", "demo", "--data", "synthetic:arith", "--split", "test"}, "split 'test'"},
        {{"eval", "demo", "--data", "synthetic:arith", "--samples", "0"}, "--samples"},
        {{"eval", "demo", "--data", "synthetic:arith", "--dtype", "int8"}, "--dtype"},
        {{"inspect"}, "missing MODEL"},
        {{"demo", "--retrain", "--steps", "-1"}, "--steps"},
        {{"demo", "--steps", "3"}, "--steps is for training a new model: add --retrain"},
        {{"demo", "--seed", "1"}, "--seed is for training a new model"},
        {{"demo", "extra"}, "unexpected argument 'extra'"},
    };
    for (const auto& c : cases) {
        const CliResult r = run_cli(c.args);
        EXPECT_EQ(r.exit_code, 1) << c.fragment << "\n" << r.err;
        EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
}

TEST_F(CliDemoEval, CtrlCCancelsTrainingAndKeepsThePreviousModel) {
    const std::string dir = make_temp_dir(), out = dir + "/demo";
    ASSERT_EQ(run_cli({"demo", "--out", out, "--steps", "1"}).exit_code, 0);
    const std::string before = slurp(out + "/model.safetensors");
    const std::string err = dir + "/stderr";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> args = {ql::test::quantlab_cli(), "demo", "--out", out, "--force", "--steps", "100000"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, ql::test::quantlab_cli(), &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    // Wait until training has started (the first progress line), then interrupt. The bound only
    // ends a hang (10 minutes): a busy machine may take long to get there.
    for (int i = 0; i < 6000 && slurp(err).find("[train]") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 130);
    EXPECT_NE(slurp(err).find("cancelled"), std::string::npos) << slurp(err);
    EXPECT_EQ(slurp(out + "/model.safetensors"), before);
    EXPECT_FALSE(fs::exists(out + ".partial"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
