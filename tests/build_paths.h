// SPDX-License-Identifier: GPL-3.0-or-later
// The build folder a test executable belongs to, and what the tests need from it, found at run
// time from the executable's own path (BUILD/tests/FOLDER/EXECUTABLE) instead of being compiled
// in: a test's object files then do not depend on the build folder, so the second LibTorch build
// of scripts/test (build-python/) takes the CLI and project tests' objects from ccache instead of
// compiling them again (docs/BUILDING.md, issue 33).
#pragma once

#include <filesystem>
#include <string>

namespace ql::test {

// BUILD, the folder CMake builds into (build/ or build-python/).
inline const std::filesystem::path& test_build_dir() {
    static const std::filesystem::path dir =
        std::filesystem::canonical("/proc/self/exe").parent_path().parent_path().parent_path();
    return dir;
}

// BUILD/app/quantlab-cli: the CLI of the same build, as the tests run it.
inline const char* quantlab_cli() {
    static const std::string path = (test_build_dir() / "app" / "quantlab-cli").string();
    return path.c_str();
}

// BUILD/peers.env: the peers venv's paths that tests/CMakeLists.txt writes at configure time.
inline std::string peers_env_file() { return (test_build_dir() / "peers.env").string(); }

}  // namespace ql::test
