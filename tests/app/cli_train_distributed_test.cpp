// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train --nproc 2: data-parallel QAD of the demo over a real Gloo group on loopback
// (two processes, as users run it): the weights equal one process's with the same global batch,
// and a rank killed mid-run ends the other with an error naming it, the project marks the run
// failed, and --resume continues from the last checkpoint. Every wait is bounded by the code
// (--dist-timeout), not by the test.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/loopback_port.h"
#include "engine/io/safetensors_file.h"
#include "projects/project_file.h"
#include "tests/app/cli_runner.h"
#include "tests/app/cli_test_demo.h"
#include "tests/build_paths.h"

extern char** environ;

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> qad_demo(const std::string& out, int64_t steps, int64_t batch = 16, const char* timeout = "60") {
    return {"train", "qad", "demo", "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:arith", "--steps",
            std::to_string(steps), "--batch-size", std::to_string(batch), "--lr", "1e-3", "--eval-samples", "16", "--seed", "3",
            "--out", out, "--dist-timeout", timeout};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

// The trained parameters of a run's checkpoint, by name.
std::map<std::string, std::vector<float>> checkpoint_parameters(const std::string& run) {
    const SafetensorsFile f = SafetensorsFile::open(run + "/checkpoint/state.safetensors");
    std::map<std::string, std::vector<float>> out;
    for (const auto& t : f.tensors()) {
        if (t.name.rfind("param.", 0) != 0) continue;
        EXPECT_EQ(t.dtype, SafetensorsDtype::F32) << t.name;
        const TensorBytes b = f.bytes(t);
        std::vector<float> v(b.size / sizeof(float));
        std::memcpy(v.data(), b.data, b.size);
        out[t.name] = std::move(v);
    }
    return out;
}

int64_t checkpoint_step(const std::string& run) {
    std::ifstream in(run + "/checkpoint/trainer_state.json");
    if (!in) return -1;
    try {
        return json::parse(in)["step"].get<int64_t>();
    } catch (const std::exception&) {
        return -1;
    }
}

// The children of `parent` (the --nproc launcher's ranks 1..N-1), from /proc.
std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(e.path() / "stat");
        std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const size_t paren = text.rfind(')');
        if (paren == std::string::npos) continue;
        std::istringstream rest(text.substr(paren + 2));
        char state = 0;
        long ppid = 0;
        rest >> state >> ppid;
        if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return out;
}

// Starts quantlab-cli with `args` and this environment plus `env` ("NAME=value"), stdout and
// stderr into files; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const std::vector<std::string>& env, const std::string& out_path,
                const std::string& err_path) {
    std::vector<std::string> argv_text = {ql::test::quantlab_cli()};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e) env_text.push_back(*e);
    env_text.insert(env_text.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -1;
}

int exit_code_of(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CliTrainDistributed, TwoRanksGiveTheWeightsOfOneProcessWithTheGlobalBatch) {
    ensure_cli_test_demo();
    const std::string dir = make_temp_dir();
    const CliResult one = run_cli(with(qad_demo(dir + "/one", 4), {"--threads", "1", "--json"}));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const CliResult two = run_cli(with(qad_demo(dir + "/two", 4), {"--nproc", "2", "--threads", "1", "--project", dir + "/p.qlab", "--json"}));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_EQ(json::parse(two.out)["steps"], 4);

    const auto a = checkpoint_parameters(dir + "/one"), b = checkpoint_parameters(dir + "/two");
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (const auto& [name, va] : a) {
        const auto& vb = b.at(name);
        ASSERT_EQ(va.size(), vb.size()) << name;
        double max_abs = 0, max_diff = 0;
        for (size_t i = 0; i < va.size(); ++i) {
            max_abs = std::max(max_abs, std::fabs(double(va[i])));
            max_diff = std::max(max_diff, std::fabs(double(va[i]) - double(vb[i])));
        }
        // Float summation order: measured up to 1.8e-6 of a tensor's largest value with Debian's
        // LibTorch + OpenBLAS and 2.0e-5 with the PyPI LibTorch (MKL blocks a GEMM of 8 rows
        // otherwise than one of 16), where one process with 2 threads instead of 1 differs from
        // itself by up to 5.7e-6 (AdamW normalises small gradients, so their rounding differences
        // reach the weights). A wrong shard or loss weighting moves weights by ~lr = 1e-3 per
        // step, 1e-2 of their size: this bound is 100x below that.
        EXPECT_LE(max_diff, 1e-4 * std::max(max_abs, 1e-12)) << name << ": max |difference| " << max_diff;
    }
    // The training moved the weights (the equality is not of two untouched models).
    const json j1 = json::parse(one.out), j2 = json::parse(two.out);
    EXPECT_GT(j1["codes_changed"].get<double>(), 0.0);
    EXPECT_NEAR(j2["after"]["kl"].get<double>(), j1["after"]["kl"].get<double>(),
                1e-4 * j1["after"]["kl"].get<double>());

    // The same two ranks started by a torchrun-style launcher (RANK, WORLD_SIZE, MASTER_ADDR,
    // MASTER_PORT) compute the same numbers bit for bit.
    const std::string port = std::to_string(free_loopback_port());
    std::vector<pid_t> ranks;
    for (int r = 1; r >= 0; --r)
        ranks.push_back(spawn_cli(with(qad_demo(dir + "/env", 4), {"--threads", "1"}),
                                  {"RANK=" + std::to_string(r), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port},
                                  dir + "/env" + std::to_string(r) + ".out", dir + "/env" + std::to_string(r) + ".err"));
    EXPECT_EQ(exit_code_of(ranks[0]), 0) << slurp(dir + "/env1.err");
    EXPECT_EQ(exit_code_of(ranks[1]), 0) << slurp(dir + "/env0.err");
    EXPECT_EQ(checkpoint_parameters(dir + "/env"), b);
    EXPECT_EQ(slurp(dir + "/env1.out"), "");  // rank 1 reports nothing

    // Rank 0 recorded the run with every rank's throughput and the all-reduce time.
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    ASSERT_EQ(p.runs().size(), 1u);
    const int64_t run = p.runs()[0].id;
    EXPECT_EQ(p.runs()[0].status, projects::RunStatus::Completed);
    for (const char* series : {"train/kl", "train/allreduce_s", "train/rank0/tokens_per_s", "train/rank1/tokens_per_s"}) {
        const auto s = p.load_series(run, series);
        ASSERT_EQ(s.size(), 4u) << series;
        for (double v : s.values) EXPECT_GT(v, 0.0) << series;
    }
    fs::remove_all(dir);
}

TEST(CliTrainDistributed, AGlobalBatchThatDoesNotSplitIsRefused) {
    ensure_cli_test_demo();
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli(with(qad_demo(dir + "/run", 2, 15), {"--nproc", "2"}));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--batch-size 15"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("multiple of 2"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/run"));
    fs::remove_all(dir);
}

TEST(CliTrainDistributed, ARankWhosePeersNeverComeGivesUpAfterTheTimeout) {
    ensure_cli_test_demo();
    const std::string dir = make_temp_dir();
    // Rank 1 of 2 with nobody hosting the store: it waits --dist-timeout 2 seconds, then says where.
    const pid_t pid = spawn_cli(qad_demo(dir + "/run", 2, 16, "2"),
                                {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=9"}, dir + "/out",
                                dir + "/err");
    EXPECT_EQ(exit_code_of(pid), 1);
    const std::string err = slurp(dir + "/err");
    EXPECT_NE(err.find("rank 1 cannot reach the rendezvous store at 127.0.0.1:9"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir + "/run"));  // only rank 0 writes DIR
    fs::remove_all(dir);
}

TEST(CliTrainDistributed, AKilledRankStopsTheOtherWithItsNameAndTheRunResumes) {
    ensure_cli_test_demo();
    const std::string dir = make_temp_dir();
    const std::vector<std::string> args =
        with(qad_demo(dir + "/run", 30), {"--checkpoint-every", "2", "--nproc", "2", "--project", dir + "/p.qlab"});
    // The launcher (rank 0) in the background, its stderr in a file.
    const std::string err_path = dir + "/stderr";
    const pid_t launcher = spawn_cli(args, {}, "/dev/null", err_path);
    ASSERT_GT(launcher, 0);

    // Once a checkpoint exists, kill rank 1 (if the run ended first, the launcher is gone and
    // the test fails below on its exit code, never hangs).
    int status = 0;
    bool ended = false;
    while (checkpoint_step(dir + "/run") < 2) {
        if (waitpid(launcher, &status, WNOHANG) == launcher) {
            ended = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(ended) << slurp(err_path);
    const std::vector<pid_t> ranks = children_of(launcher);
    ASSERT_EQ(ranks.size(), 1u);
    ASSERT_EQ(kill(ranks[0], SIGKILL), 0);
    ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
    const std::string err = slurp(err_path);
    ASSERT_TRUE(WIFEXITED(status)) << err;
    EXPECT_EQ(WEXITSTATUS(status), 1) << err;
    EXPECT_NE(err.find("rank 1 (pid " + std::to_string(ranks[0]) + ") has died"), std::string::npos) << err;
    EXPECT_NE(err.find("killed by signal 9"), std::string::npos) << err;
    const int64_t saved = checkpoint_step(dir + "/run");
    EXPECT_GE(saved, 2);
    EXPECT_LT(saved, 30);

    {
        const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
        ASSERT_EQ(p.runs().size(), 1u);
        EXPECT_EQ(p.runs()[0].status, projects::RunStatus::Failed);
        EXPECT_NE(p.runs()[0].message.find("rank 1"), std::string::npos) << p.runs()[0].message;
    }

    // --resume continues from the last checkpoint on two ranks again.
    std::vector<std::string> resume = qad_demo(dir + "/run", 30);
    const CliResult r = run_cli(with(resume, {"--checkpoint-every", "2", "--nproc", "2", "--resume", "--json"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["resumed_from"], saved);
    EXPECT_EQ(j["steps"], 30);
    EXPECT_EQ(checkpoint_step(dir + "/run"), 30);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
