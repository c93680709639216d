// SPDX-License-Identifier: GPL-3.0-or-later
// LLM.int8() against bitsandbytes' own functions (tests/peers/llm_int8_bitsandbytes.py): the
// int8_vectorwise weight codes and row absmax, the llm_int8 activation codes, row absmax and outlier
// columns bit for bit on random and real SmolLM2 weights and activations, and whole layers (bitsandbytes'
// LLM.int8() matmul) within 1e-4. A missing peer or model fails, never skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/app/cli_runner.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::test {
namespace {

TEST(CliLlmInt8Peer, CodesScalesAndLayersEqualBitsandbytes) {
    const std::string dir = make_temp_dir();
    const std::string gguf = peer_path("QUANTLAB_SMOLLM2_GGUF");
    ASSERT_TRUE(std::filesystem::is_regular_file(gguf)) << "the real model is missing: " << gguf << " (scripts/setup-peers)";
    expect_peer_passes(peers_python(), "llm_int8_bitsandbytes.py",
                       "'" + std::string(QUANTLAB_CLI) + "' '" + gguf + "' '" + dir + "/work'", dir);
}

}  // namespace
}  // namespace ql::test
