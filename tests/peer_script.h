// SPDX-License-Identifier: GPL-3.0-or-later
// Peer check scripts of tests/peers/, run with the peers venv's python (tests/peer_paths.h). A
// peer that cannot run fails its check (it never skips).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ql::test {

// What a peer script did: its exit status as std::system gives it (0 = success) and its output
// (stdout and stderr together).
struct PeerOutput {
    int status = -1;
    std::string output;
};

// Runs tests/peers/<script> with `python` on `quoted_args` (already shell-quoted); the log goes
// to log_dir/peer.log.
inline PeerOutput run_peer_script(const std::string& python, const std::string& script, const std::string& quoted_args,
                                  const std::string& log_dir) {
    const std::string path = std::string(QUANTLAB_SOURCE_DIR) + "/tests/peers/" + script;
    const std::string log = log_dir + "/peer.log";
    PeerOutput r;
    r.status = std::system(("'" + python + "' '" + path + "' " + quoted_args + " > '" + log + "' 2>&1").c_str());
    std::ifstream in(log);
    r.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return r;
}

// The check passes when the script exits 0 and prints a line "PASS"; its output is shown either
// way. `dir` (the case's scratch folder) receives the log and is removed afterwards.
inline void expect_peer_passes(const std::string& python, const std::string& script, const std::string& quoted_args,
                               const std::string& dir) {
    const PeerOutput r = run_peer_script(python, script, quoted_args, dir);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("\nPASS"), std::string::npos) << r.output;
    std::printf("%s", r.output.c_str());
    std::filesystem::remove_all(dir);
}

}  // namespace ql::test
