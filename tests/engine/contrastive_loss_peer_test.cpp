// SPDX-License-Identifier: GPL-3.0-or-later
// Encoder QAT's loss against its peer: sentence-transformers' MultipleNegativesRankingLoss (the
// loss all-MiniLM-L6-v2 was fine-tuned with) computes, from the real model and the same token ids,
// the loss QuantLab's in_batch_contrastive_loss gives on QuantLab's embeddings of the sentences and
// their deletion views; the script also redraws the views from the documented formula
// (tests/peers/contrastive_loss_peer.py).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/nd_array.h"
#include "engine/data/sentence_data.h"
#include "engine/eval/contrastive_loss.h"
#include "engine/eval/sentence_embedder.h"
#include "engine/io/npy_file.h"
#include "engine/loading/model_source.h"
#include "tests/engine/export_test_support.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

void write_ids(const std::string& path, const at::Tensor& ids) {
    const at::Tensor t = ids.to(at::kLong).contiguous();
    NdArray a;
    a.dtype = DType::Int64;
    a.shape = {t.size(0), t.size(1)};
    a.bytes.resize(static_cast<size_t>(t.numel()) * sizeof(int64_t));
    std::memcpy(a.bytes.data(), t.data_ptr<int64_t>(), a.bytes.size());
    write_npy(path, a);
}

TEST(ContrastiveLossPeer, SentenceTransformersMultipleNegativesRankingLossAgreesOnMiniLm) {
    const std::string python = test::peers_python();
    const std::string minilm = test::minilm_dir();
    const std::string dir = test::temp_dir("contrastive-peer");
    OpenedModel m = open_model(minilm);
    const std::vector<std::string> sentences = {
        "A target is built from the source files listed in the command invocation.",
        "The generator decides which build system files are written.",
        "Variables set in a directory are inherited by its subdirectories.",
        "Tests are run by the ctest program after the project is built.",
        "A cat sleeps on the warm windowsill all afternoon.",
        "The train to the coast leaves every hour from platform two.",
        "Install rules copy the built files into the installation prefix.",
        "Each policy controls one behaviour change between versions.",
        "Short.",
        "Generator expressions are evaluated when the build system is generated.",
        "She bought fresh bread and a bag of apples at the market.",
        "The cache stores values that persist between runs of the configure step."};
    const uint64_t seed = 17;
    const Dataset d = make_sentence_dataset(sentences, m.data.encode_sentence, 256, m.data.pad_id, "peer sentences");
    const Dataset v = token_deletion_view(d, seed);
    ASSERT_LT(v.attention_mask.sum().item<int64_t>(), d.attention_mask.sum().item<int64_t>()) << "the views delete tokens";
    NullJobSink sink;
    CancellationToken cancel;
    const at::Tensor anchors = embed_sentences(*m.model, d, 32, sink, cancel);
    const at::Tensor positives = embed_sentences(*m.model, v, 32, sink, cancel);
    const double loss = in_batch_contrastive_loss(anchors, positives).item<double>();
    write_ids(dir + "/anchor_ids.npy", d.inputs);
    write_ids(dir + "/anchor_mask.npy", d.attention_mask);
    write_ids(dir + "/view_ids.npy", v.inputs);
    write_ids(dir + "/view_mask.npy", v.attention_mask);
    // The views in reverse order: every diagonal entry is another sentence's view, a loss far from 0.
    const double reversed = in_batch_contrastive_loss(anchors, positives.flip(0)).item<double>();
    std::ofstream(dir + "/quantlab.json") << nlohmann::json({{"loss", loss},
                                                             {"loss_reversed", reversed},
                                                             {"top1", in_batch_top1(anchors, positives)},
                                                             {"seed", seed},
                                                             {"rate", kDeletionRate},
                                                             {"scale", kContrastiveScale}})
                                                 .dump();
    test::expect_peer_passes(python, "contrastive_loss_peer.py", "'" + minilm + "' '" + dir + "'", dir);
}

}  // namespace
}  // namespace ql
