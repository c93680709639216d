// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli divergence checked by the real peers (tests/app/divergence_peer.py): transformers
// runs the FP model and the weights QuantLab's quantized forward uses (a weight-only NF4
// checkpoint exported as fakequant), numpy computes llama.cpp's token statistics; the depth-wise
// errors and the statistics must agree. The golden tiny Llama (a decoder) and the real
// all-MiniLM-L6-v2 (an encoder: hidden states, isolated blocks and the sentence embedding).
// A peer that cannot run fails the test.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/app/cli_runner.h"
#include "tests/peer_paths.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;

const std::string kScript = std::string(QUANTLAB_SOURCE_DIR) + "/tests/app/divergence_peer.py";

int run_python(const std::vector<std::string>& args, std::string& output) {
    const std::string log = make_temp_dir() + "/peer.log";
    std::string cmd = "'" + peers_python() + "' '" + kScript + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " >'" + log + "' 2>&1";
    const int status = std::system(cmd.c_str());
    output = slurp(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void check_against_transformers(const std::string& model) {
    const std::string dir = make_temp_dir();
    std::string out;
    ASSERT_EQ(run_python({"ids", model, dir + "/ids.npy"}, out), 0) << out;
    const CliResult ptq = run_cli({"ptq", model, "--recipe", "NF4", "--calib", dir + "/ids.npy", "--out", dir + "/q"});
    ASSERT_EQ(ptq.exit_code, 0) << ptq.err;
    const CliResult fq = run_cli({"export", dir + "/q", "--as", "fakequant", "--out", dir + "/fq"});
    ASSERT_EQ(fq.exit_code, 0) << fq.err;
    const CliResult d = run_cli({"divergence", model, "--quantized", dir + "/q", "--data", dir + "/ids.npy", "--json"});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    std::ofstream(dir + "/report.json") << d.out;
    const int rc = run_python({"check", model, dir + "/fq", dir + "/ids.npy", dir + "/report.json"}, out);
    EXPECT_EQ(rc, 0) << out;
    std::printf("%s", out.c_str());
    fs::remove_all(dir);
}

TEST(CliDivergencePeer, TinyLlamaAgreesWithTransformersAndNumpy) {
    check_against_transformers(std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama");
}

TEST(CliDivergencePeer, MiniLmAgreesWithTransformers) { check_against_transformers(minilm_dir()); }

}  // namespace
}  // namespace ql::test
