// SPDX-License-Identifier: GPL-3.0-or-later
// Formats checked by the peers that define them, through quantlab-cli fakequant on random data and
// the real SmolLM2 (its weights, and its activations captured by transformers):
// - NVFP4 with E5M3 scales against AutoRound's own quantizer (tests/peers/nvfp4_e5m3_autoround.py:
//   nvfp4_v2, the data type of its NVFP4_E5M3 scheme): values and block scales bit for bit on
//   random blocks over 16 decades, binade edges, short and ragged rows and zero blocks;
// - LLM.int8() against bitsandbytes' own functions (tests/peers/llm_int8_bitsandbytes.py): weight
//   and activation codes, row absmax and outlier columns bit for bit, whole layers within 1e-4.
// A missing peer or model fails, never skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/app/cli_runner.h"
#include "tests/build_paths.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::test {
namespace {

// Runs tests/peers/SCRIPT with the CLI, the real model and a scratch folder.
void expect_format_peer_passes(const std::string& script) {
    const std::string dir = make_temp_dir();
    const std::string gguf = peer_path("QUANTLAB_SMOLLM2_GGUF");
    ASSERT_TRUE(std::filesystem::is_regular_file(gguf)) << "the real model is missing: " << gguf << " (scripts/setup-peers)";
    expect_peer_passes(peers_python(), script, "'" + std::string(ql::test::quantlab_cli()) + "' '" + gguf + "' '" + dir + "/work'", dir);
}

TEST(CliNvfp4E5m3Peer, FakeQuantEqualsAutoRoundBitForBit) { expect_format_peer_passes("nvfp4_e5m3_autoround.py"); }

TEST(CliLlmInt8Peer, CodesScalesAndLayersEqualBitsandbytes) { expect_format_peer_passes("llm_int8_bitsandbytes.py"); }

}  // namespace
}  // namespace ql::test
