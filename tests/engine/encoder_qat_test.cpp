// SPDX-License-Identifier: GPL-3.0-or-later
// QAT of sentence encoders (docs/TRAINING.md "Encoders"): the in-batch contrastive loss against
// the formula of sentence-transformers' MultipleNegativesRankingLoss, the deletion views against
// their documented draw, random sentences for encoders and line ranges of sentence files.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/data/dataset.h"
#include "engine/data/sentence_data.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/eval/contrastive_loss.h"
#include "engine/train/training_batches.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// [CLS] = 101, [SEP] = 102 around one id per character (as a WordPiece tokenizer's specials).
std::vector<int64_t> letter_ids(const std::string& s, const std::string&, int64_t max_tokens) {
    std::vector<int64_t> ids{101};
    for (char c : s)
        if (static_cast<int64_t>(ids.size()) + 1 < max_tokens) ids.push_back(1000 + static_cast<unsigned char>(c));
    ids.push_back(102);
    return ids;
}

DataContext sentence_context() {
    DataContext c;
    c.vocab_size = 2000;
    c.max_positions = 64;
    c.encode_sentence = letter_ids;
    c.sentence_length = 64;
    c.model_name = "a test encoder";
    return c;
}

TEST(ContrastiveLoss, IsTheCrossEntropyOfScaledCosinesAgainstTheDiagonal) {
    at::manual_seed(3);
    const at::Tensor a = at::randn({5, 7}, at::kFloat), p = at::randn({5, 7}, at::kFloat);
    // By hand in double: s_ij = 20 cos(a_i, p_j); loss = mean_i (log sum_j exp s_ij - s_ii).
    const at::Tensor ad = a.to(at::kDouble), pd = p.to(at::kDouble);
    double expected = 0;
    int64_t own_best = 0;
    for (int64_t i = 0; i < 5; ++i) {
        std::vector<double> s;
        for (int64_t j = 0; j < 5; ++j)
            s.push_back(20.0 * (ad[i] * pd[j]).sum().item<double>() / (ad[i].norm().item<double>() * pd[j].norm().item<double>()));
        double z = 0;
        for (double v : s) z += std::exp(v);
        expected += std::log(z) - s[static_cast<size_t>(i)];
        own_best += std::max_element(s.begin(), s.end()) - s.begin() == i;
    }
    expected /= 5;
    EXPECT_NEAR(in_batch_contrastive_loss(a, p).item<double>(), expected, 1e-4 * std::max(1.0, expected));
    EXPECT_DOUBLE_EQ(in_batch_top1(a, p), static_cast<double>(own_best) / 5.0);
    // Each anchor its own positive: top-1 is 1, and the loss is what the other rows' cosines leave.
    EXPECT_DOUBLE_EQ(in_batch_top1(a, a), 1.0);
    EXPECT_LT(in_batch_contrastive_loss(a, a).item<double>(), in_batch_contrastive_loss(a, p).item<double>());
    // A gradient flows to both sides (the student computes both).
    const at::Tensor x = a.clone().requires_grad_(true), y = p.clone().requires_grad_(true);
    in_batch_contrastive_loss(x, y).backward();
    EXPECT_GT(x.grad().abs().sum().item<double>(), 0);
    EXPECT_GT(y.grad().abs().sum().item<double>(), 0);
}

TEST(ContrastiveLoss, RefusesMismatchedShapesAndASingleSentence) {
    const std::string shapes = user_error_text([] { in_batch_contrastive_loss(at::ones({4, 3}), at::ones({4, 2})); });
    EXPECT_TRUE(contains(shapes, "anchors and positives must both be [batch, dimension]")) << shapes;
    const std::string one = user_error_text([] { in_batch_contrastive_loss(at::ones({1, 3}), at::ones({1, 3})); });
    EXPECT_TRUE(contains(one, "needs at least 2 sentences per batch")) << one;
}

TEST(DeletionView, DeletesTheDocumentedDrawAndKeepsTheSpecialTokens) {
    std::vector<std::string> sentences;
    for (int i = 0; i < 30; ++i) sentences.push_back(std::string(static_cast<size_t>(4 + i % 20), static_cast<char>('a' + i % 26)));
    sentences.push_back("x");  // [CLS] x [SEP]: three tokens keep their middle one
    const Dataset d = make_sentence_dataset(sentences, letter_ids, 64, 0, "mem");
    const uint64_t seed = 11;
    const Dataset v = token_deletion_view(d, seed);
    ASSERT_EQ(v.size(), d.size());
    int64_t deleted = 0, deletable = 0;
    for (int64_t r = 0; r < d.size(); ++r) {
        const int64_t len = d.attention_mask[r].sum().item<int64_t>();
        std::vector<int64_t> expected;
        for (int64_t p = 0; p < len; ++p) {
            const double u = static_cast<double>(mix64(mix64(seed) ^ mix64(static_cast<uint64_t>(r) << 32 | static_cast<uint64_t>(p)))) /
                             18446744073709551616.0;
            if (p == 0 || p == len - 1 || u >= kDeletionRate) expected.push_back(d.inputs[r][p].item<int64_t>());
        }
        if (len >= 3 && expected.size() == 2) expected.insert(expected.begin() + 1, d.inputs[r][1].item<int64_t>());
        const int64_t kept = v.attention_mask[r].sum().item<int64_t>();
        ASSERT_EQ(kept, static_cast<int64_t>(expected.size())) << "row " << r;
        for (int64_t p = 0; p < kept; ++p) EXPECT_EQ(v.inputs[r][p].item<int64_t>(), expected[static_cast<size_t>(p)]) << r << "," << p;
        EXPECT_EQ(v.inputs[r][0].item<int64_t>(), 101);
        EXPECT_EQ(v.inputs[r][kept - 1].item<int64_t>(), 102);
        deleted += len - kept;
        deletable += len - 2;
    }
    // About 15 % of the middle tokens go.
    EXPECT_GT(deleted, deletable / 12);
    EXPECT_LT(deleted, deletable / 4);
    // Deterministic per seed, different across seeds.
    EXPECT_TRUE(token_deletion_view(d, seed).inputs.equal(v.inputs));
    EXPECT_FALSE(token_deletion_view(d, seed + 1).inputs.equal(v.inputs));
}

TEST(RandomSentences, AreRandomIdsBetweenTheEncodersSpecialTokens) {
    const DataContext c = sentence_context();
    DataOptions o;
    o.samples = 8;
    o.seed = 5;
    o.split = DataSplit::Train;
    const Dataset train = load_dataset("synthetic:random-tokens", o, c);
    ASSERT_EQ(train.inputs.sizes(), (at::IntArrayRef{8, 32}));  // 32 tokens by default
    EXPECT_TRUE(train.inputs.select(1, 0).eq(101).all().item<bool>());
    EXPECT_TRUE(train.inputs.select(1, 31).eq(102).all().item<bool>());
    EXPECT_TRUE(train.attention_mask.eq(1).all().item<bool>());
    EXPECT_TRUE(train.targets.eq(Dataset::kIgnoreIndex).all().item<bool>());
    // The middle ids are make_random_token_dataset's draw.
    const Dataset ids = make_random_token_dataset(2000, 30, DataSplit::Train, 5, 8);
    EXPECT_TRUE(train.inputs.slice(1, 1, 31).equal(ids.inputs));
    o.split = DataSplit::Validation;
    EXPECT_FALSE(load_dataset("synthetic:random-tokens", o, c).inputs.equal(train.inputs));
    // Training reads fresh random sentences every step, the same for a step on every call.
    const TrainingBatches batches("synthetic:random-tokens", c, 4, 9);
    EXPECT_EQ(batches.batch(0).inputs.sizes(), (at::IntArrayRef{4, 32}));
    EXPECT_TRUE(batches.batch(0).attention_mask.defined());
    EXPECT_TRUE(batches.batch(1).inputs.equal(batches.batch(1).inputs));
    EXPECT_FALSE(batches.batch(0).inputs.equal(batches.batch(1).inputs));
    o.sequence_length = 2;  // no room beside [CLS] and [SEP]
    const std::string e = user_error_text([&] { load_dataset("synthetic:random-tokens", o, c); });
    EXPECT_TRUE(contains(e, "leave no room beside the 2 special tokens")) << e;
}

TEST(SentenceLineRange, SelectsThoseLinesAndNamesBadRanges) {
    char tmpl[] = "/tmp/quantlab-line-range-XXXXXX";
    const std::string dir = mkdtemp(tmpl), file = dir + "/s.txt";
    {
        std::ofstream out(file);
        for (int i = 1; i <= 12; ++i) out << (i == 4 ? std::string("   ") : "line " + std::to_string(i)) << "\n";
    }
    const DataContext c = sentence_context();
    DataOptions all;
    all.split = DataSplit::All;
    const Dataset d = load_dataset(file + "#lines=3-6", all, c);
    EXPECT_EQ(d.size(), 3);  // lines 3, 5, 6: the blank line 4 is dropped
    const Dataset line5 = load_dataset(file + "#lines=5-5", all, c);
    EXPECT_TRUE(line5.inputs.equal(make_sentence_dataset({"line 5"}, letter_ids, 64, 0, "mem").inputs));
    // Splits apply within the range: 10 sentences, the last one held out.
    DataOptions train;
    train.split = DataSplit::Train;
    EXPECT_EQ(load_dataset(file + "#lines=1-11", train, c).size(), 9);
    for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
             {file + "#lines=6-3", "with 1 <= A <= B"},
             {file + "#lines=0-3", "with 1 <= A <= B"},
             {file + "#lines=3", "must be #lines=A-B"},
             {file + "#lines=a-b", "must be #lines=A-B"},
             {file + "#lines=3-99", "line 99 is past the last sentence of " + file + " (line 12)"},
             {dir + "/none.txt#lines=1-2", "no such file " + dir + "/none.txt"}}) {
        const std::string e = user_error_text([&] { load_dataset(spec, all, c); });
        EXPECT_TRUE(contains(e, message)) << spec << ": " << e;
        EXPECT_TRUE(contains(e, "data '" + spec + "'")) << e;
    }
    // A model without a sentence encoder reads the lines as text (tests/engine/dataset_test.cpp),
    // which needs a tokenizer.
    DataContext decoder = c;
    decoder.encode_sentence = nullptr;
    decoder.encode_text = nullptr;
    const std::string e = user_error_text([&] { load_dataset(file + "#lines=1-2", all, decoder); });
    EXPECT_TRUE(contains(e, "selects the lines of a text file for a model with a tokenizer; a test encoder has none")) << e;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
