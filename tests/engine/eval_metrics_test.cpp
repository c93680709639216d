// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <cmath>

#include "engine/data/dataset.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/metrics.h"
#include "engine/models/builtin_models.h"

namespace ql {
namespace {

constexpr int64_t I = Dataset::kIgnoreIndex;

at::Tensor floats(std::vector<float> v, std::vector<int64_t> shape) {
    return at::from_blob(v.data(), shape, at::kFloat).clone();
}
at::Tensor longs(std::vector<int64_t> v, std::vector<int64_t> shape) {
    return at::from_blob(v.data(), shape, at::kLong).clone();
}

TEST(EvalMetrics, TokenNllIsTheNegativeLogSoftmaxOfTheTarget) {
    // One sequence, two positions, vocabulary 3; the second position is not scored.
    const at::Tensor logits = floats({0, 0, 0, 1, 2, 3}, {1, 2, 3});
    const at::Tensor nll = token_nll(logits, longs({2, I}, {1, 2}));
    EXPECT_NEAR(nll[0][0].item<double>(), std::log(3.0), 1e-6);
    EXPECT_EQ(nll[0][1].item<double>(), 0.0);
    // Perplexity of a uniform prediction over 3 tokens is 3.
    EXPECT_NEAR(std::exp(nll.sum().item<double>() / 1.0), 3.0, 1e-5);
}

TEST(EvalMetrics, ExactMatchNeedsEveryScoredPositionRight) {
    // 3 sequences of 3 positions, vocabulary 4; argmax per position: seq0 [1,2,3], seq1 [1,2,3],
    // seq2 [0,0,0].
    std::vector<float> v(3 * 3 * 4, 0.0f);
    const int argmax[3][3] = {{1, 2, 3}, {1, 2, 3}, {0, 0, 0}};
    for (int b = 0; b < 3; ++b)
        for (int t = 0; t < 3; ++t) v[(b * 3 + t) * 4 + argmax[b][t]] = 5.0f;
    const at::Tensor logits = floats(v, {3, 3, 4});
    // seq0: prompt ignored, answer [2, 3] right. seq1: answer [2, 0] wrong at the end.
    // seq2: nothing scored -> not a match.
    const at::Tensor targets = longs({I, 2, 3, I, 2, 0, I, I, I}, {3, 3});
    const at::Tensor em = exact_match(logits, targets);
    EXPECT_TRUE(em[0].item<bool>());
    EXPECT_FALSE(em[1].item<bool>());
    EXPECT_FALSE(em[2].item<bool>());
}

TEST(EvalMetrics, KlOfIdenticalDistributionsIsZero) {
    const at::Tensor logits = at::randn({2, 5, 7}, at::TensorOptions().dtype(at::kFloat));
    EXPECT_LT(token_kl(logits, logits).abs().max().item<double>(), 1e-6);
    EXPECT_TRUE(top1_agreement(logits, logits).all().item<bool>());
    // Shifting all logits by a constant changes nothing.
    EXPECT_LT(token_kl(logits, logits.add(3.0)).abs().max().item<double>(), 1e-5);
}

TEST(EvalMetrics, KlOfAKnownPair) {
    // Teacher p = (0.5, 0.5), student q = (0.25, 0.75):
    // KL(p||q) = 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5 ln 2 + 0.5 ln(2/3).
    const at::Tensor teacher = floats({0, 0}, {1, 1, 2});
    const at::Tensor student = floats({0, static_cast<float>(std::log(3.0))}, {1, 1, 2});
    const double expected = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
    EXPECT_NEAR(token_kl(teacher, student).item<double>(), expected, 1e-6);
    // The direction matters: KL(q||p) differs.
    EXPECT_GT(std::abs(token_kl(student, teacher).item<double>() - expected), 1e-3);
    // Teacher argmax 0 (tie broken to the first index), student 1: disagreement.
    EXPECT_FALSE(top1_agreement(floats({1, 0}, {1, 1, 2}), student).item<bool>());
}

TEST(EvalMetrics, ClassifierLogitsAreOnePositionEach) {
    const at::Tensor logits = floats({2, 0, 0, 0, 0, 2}, {2, 3});
    EXPECT_EQ(token_nll(logits, longs({0, 1}, {2})).sizes(), (at::IntArrayRef{2, 1}));
    EXPECT_TRUE(exact_match(logits, longs({0, 2}, {2})).all().item<bool>());
}

class Evaluator : public ::testing::Test {
protected:
    static ModelConfig tiny_decoder() {
        ModelConfig c = demo_decoder_config(48);
        c.hidden_size = 32;
        c.num_layers = 1;
        c.num_heads = 2;
        c.num_kv_heads = 1;
        c.head_dim = 16;
        c.intermediate_size = 64;
        return c;
    }
};

TEST_F(Evaluator, SelfAsTeacherGivesZeroKlFullAgreementAndDomainTotals) {
    auto model = create_model(tiny_decoder(), 1);
    const Dataset data = make_synthetic_dataset(parse_synthetic_spec("synthetic:arith"), DataSplit::Validation, 0, 30);
    NullJobSink sink;
    CancellationToken cancel;
    EvalOptions o;
    o.batch_size = 7;  // uneven batches
    const EvalReport r = evaluate(*model, model.get(), data, o, sink, cancel);
    EXPECT_EQ(r.overall.examples, 30);
    EXPECT_EQ(r.overall.tokens, 30 * 5);  // 4 digits + <eos>
    ASSERT_TRUE(r.overall.kl && r.overall.agreement && r.overall.exact_match && r.overall.ppl);
    EXPECT_LT(*r.overall.kl, 1e-6);
    EXPECT_DOUBLE_EQ(*r.overall.agreement, 1.0);
    EXPECT_NEAR(*r.overall.ppl, std::exp(r.overall.loss), 1e-9);
    EXPECT_FALSE(r.overall.accuracy);
    ASSERT_EQ(r.domains.size(), 3u);
    EXPECT_EQ(r.domains[0].first, "+");
    double loss_sum = 0;
    for (const auto& [name, m] : r.domains) {
        EXPECT_EQ(m.examples, 10);
        loss_sum += m.loss * static_cast<double>(m.tokens);
    }
    EXPECT_NEAR(loss_sum / 150.0, r.overall.loss, 1e-9);
    // Same numbers with one batch.
    const EvalReport whole = evaluate(*model, nullptr, data, EvalOptions{}, sink, cancel);
    EXPECT_NEAR(whole.overall.loss, r.overall.loss, 1e-5);
    EXPECT_FALSE(whole.overall.kl);
}

TEST_F(Evaluator, ReportsProgressAndStopsWhenCancelled) {
    struct Recorder : JobSink {
        std::vector<int64_t> done;
        CancellationToken* cancel = nullptr;
        void progress(int64_t d, int64_t, const std::string& phase) override {
            EXPECT_EQ(phase, "eval");
            done.push_back(d);
            if (cancel && d >= 20) cancel->cancel();
        }
    } sink;
    auto model = create_model(tiny_decoder(), 1);
    const Dataset data = make_synthetic_dataset({SyntheticDomain::Add}, DataSplit::Validation, 0, 50);
    CancellationToken cancel;
    EvalOptions o;
    o.batch_size = 10;
    evaluate(*model, nullptr, data, o, sink, cancel);
    EXPECT_EQ(sink.done, (std::vector<int64_t>{0, 10, 20, 30, 40, 50}));
    sink.done.clear();
    sink.cancel = &cancel;
    EXPECT_THROW(evaluate(*model, nullptr, data, o, sink, cancel), JobCancelled);
    EXPECT_EQ(sink.done.back(), 20);
}

TEST_F(Evaluator, ClassifierAccuracyOnImages) {
    auto model = create_model(cnn_config(1, 8, 4, 3), 2);
    Dataset data;
    data.kind = Dataset::Kind::Images;
    data.inputs = at::rand({12, 1, 8, 8});
    data.targets = at::randint(0, 3, {12}, at::TensorOptions().dtype(at::kLong));
    NullJobSink sink;
    CancellationToken cancel;
    const EvalReport r = evaluate(*model, nullptr, data, EvalOptions{}, sink, cancel);
    ASSERT_TRUE(r.overall.accuracy);
    EXPECT_FALSE(r.overall.ppl);
    EXPECT_FALSE(r.overall.exact_match);
    const at::Tensor logits = model->forward(data.inputs);
    EXPECT_NEAR(*r.overall.accuracy, logits.argmax(-1).eq(data.targets).to(at::kDouble).mean().item<double>(), 1e-12);
    EXPECT_NEAR(r.overall.loss, at::cross_entropy_loss(logits, data.targets).item<double>(), 1e-5);
}

}  // namespace
}  // namespace ql
