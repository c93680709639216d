// SPDX-License-Identifier: GPL-3.0-or-later
// Rotated models are still the same function, checked by Hugging Face transformers' own modeling
// code (tests/peers/rotation_transformers.py): the golden tiny Llama with every rotation, and the
// real all-MiniLM-L6-v2 (an encoder: R2 and R4 apply, R1 does not). A peer that cannot run fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/export/fakequant_export.h"
#include "engine/loading/model_source.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"
#include "tests/engine/export_test_support.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

void expect_transformers_agree(const std::string& model, const std::string& rotation, const std::string& kind) {
    const std::string python = test::peers_python();
    OpenedModel m = open_model(model);
    QuantizedModel q(*m.model, parse_recipe(R"({"quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "fp32"}},
        {"quantizer_name": "*input_quantizer", "cfg": {"format": "fp32"}},
        {"quantizer_name": "*lm_head*", "enable": false}], "rotation": )" + rotation + "}",
                                            "passthrough recipe"));
    NullJobSink sink;
    CancellationToken cancel;
    run_ptq_pipeline(q, test::tokens_for(m, 4, 1), PtqOptions{}, sink, cancel);
    const std::string dir = test::temp_dir("rotation-peer");
    export_fakequant(q, m.path, dir + "/rotated", false, sink, cancel);
    const test::PeerOutput peer =
        test::run_peer_script(python, "rotation_transformers.py", "'" + m.path + "' '" + dir + "/rotated' " + kind, dir);
    const std::string& output = peer.output;
    EXPECT_EQ(peer.status, 0) << output;
    const size_t line = output.rfind("transformers ");
    std::printf("%s %s: %s", model.c_str(), rotation.c_str(), (line == std::string::npos ? output : output.substr(line)).c_str());
    std::filesystem::remove_all(dir);
}

TEST(RotationPeer, TransformersComputesTheSameLlamaAfterEveryRotation) {
    expect_transformers_agree(test::tiny_llama(), R"("hadamard")", "causal");
    expect_transformers_agree(test::tiny_llama(), R"({"method": "rht", "block_size": 16})", "causal");
}

TEST(RotationPeer, TransformersComputesTheSameMiniLmAfterHeadAndDownProjectionRotations) {
    expect_transformers_agree(test::minilm_dir(), R"("hadamard")", "encoder");
}

}  // namespace
}  // namespace ql
