// SPDX-License-Identifier: GPL-3.0-or-later
// Runs the real quantlab-cli binary, as scripts and users do, capturing exit code and output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/build_paths.h"

namespace ql::test {

// The golden tiny Llama (tests/data/models/llama), the CLI tests' usual model.
inline const std::string kLlama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

struct CliResult {
    int exit_code = -1;
    std::string out, err;
};

inline std::string make_temp_dir() {
    char tmpl[] = "/tmp/quantlab-cli-XXXXXX";
    return mkdtemp(tmpl);
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline CliResult run_cli(const std::vector<std::string>& args) {
    static const std::string dir = make_temp_dir();
    const std::string out = dir + "/stdout", err = dir + "/stderr";
    std::string cmd = "'" + std::string(ql::test::quantlab_cli()) + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

// run_cli that must succeed: std::runtime_error with the command line, exit code and stderr
// otherwise (for a suite's preparation, where a failure fails every test of the suite).
inline CliResult run_cli_ok(const std::vector<std::string>& args) {
    CliResult r = run_cli(args);
    if (r.exit_code != 0) {
        std::string line = "quantlab-cli";
        for (const auto& a : args) line += " " + a;
        throw std::runtime_error(line + " failed (" + std::to_string(r.exit_code) + "): " + r.err);
    }
    return r;
}

}  // namespace ql::test
