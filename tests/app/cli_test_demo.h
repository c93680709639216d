// SPDX-License-Identifier: GPL-3.0-or-later
// The few-step demo the CLI tests share: retrained (`quantlab-cli demo --retrain --steps 3`) into
// the build folder's test cache, once, under a lock, and again whenever the CLI binary is newer.
// Every CLI test that needs a retrained demo calls this one function, so the cache always holds
// the model this command made (tests of one suite share a process, suites run in parallel).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "cli_runner.h"
#include "tests/build_paths.h"

namespace ql::test {

// The XDG cache folder of the CLI tests (build/tests/test-cache); its quantlab/demo is the demo.
inline std::string cli_test_cache() {
    return (std::filesystem::path(ql::test::quantlab_cli()).parent_path().parent_path() / "test-cache").string();
}

inline std::string cli_test_demo_dir() { return cli_test_cache() + "/quantlab/demo"; }

// Sets XDG_CACHE_HOME to the test cache and makes sure its demo is current; throws (failing the
// test) when the CLI cannot train it.
inline void ensure_cli_test_demo() {
    namespace fs = std::filesystem;
    setenv("XDG_CACHE_HOME", cli_test_cache().c_str(), 1);
    fs::create_directories(cli_test_cache());
    const int lock = open((cli_test_cache() + "/lock").c_str(), O_RDWR | O_CREAT, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + cli_test_cache() + "/lock");
    const std::string record = cli_test_demo_dir() + "/quantlab.json";
    CliResult r;
    r.exit_code = 0;
    if (!fs::exists(record) || fs::last_write_time(record) < fs::last_write_time(ql::test::quantlab_cli()))
        r = run_cli({"demo", "--retrain", "--steps", "3", "--json"});
    close(lock);
    if (r.exit_code != 0) throw std::runtime_error("quantlab-cli demo --retrain --steps 3 failed: " + r.err);
}

}  // namespace ql::test
