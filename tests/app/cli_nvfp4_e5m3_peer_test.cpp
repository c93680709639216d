// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 with E5M3 block scales against AutoRound's own quantizer (tests/peers/nvfp4_e5m3_autoround.py:
// nvfp4_v2, the data type of its NVFP4_E5M3 scheme) on random blocks over 16 decades, binade
// edges, short and ragged rows, zero blocks and real SmolLM2 weights: quantlab-cli fakequant's
// values and block scales equal bit for bit. A missing peer or model fails, never skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/app/cli_runner.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql::test {
namespace {

TEST(CliNvfp4E5m3Peer, FakeQuantEqualsAutoRoundBitForBit) {
    const std::string dir = make_temp_dir();
    const std::string gguf = peer_path("QUANTLAB_SMOLLM2_GGUF");
    ASSERT_TRUE(std::filesystem::is_regular_file(gguf)) << "the real model is missing: " << gguf << " (scripts/setup-peers)";
    expect_peer_passes(peers_python(), "nvfp4_e5m3_autoround.py",
                       "'" + std::string(QUANTLAB_CLI) + "' '" + gguf + "' '" + dir + "/work'", dir);
}

}  // namespace
}  // namespace ql::test
