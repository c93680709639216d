// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <map>

#include "engine/train/demo_trainer.h"

namespace ql {
namespace {

DemoTrainingConfig tiny() {
    DemoTrainingConfig c = demo_training_config();
    c.model.hidden_size = 32;
    c.model.num_layers = 1;
    c.model.num_heads = 2;
    c.model.num_kv_heads = 1;
    c.model.head_dim = 16;
    c.model.intermediate_size = 64;
    c.steps = 40;
    c.batch_size = 32;
    c.schedule.warmup_steps = 5;
    c.eval_every = 20;
    c.eval_samples = 30;
    c.seed = 3;
    return c;
}

struct Recorder : JobSink {
    std::map<std::string, std::vector<double>> metrics;
    int64_t last_done = 0, total = 0;
    void metric(int64_t, const std::string& name, double value) override { metrics[name].push_back(value); }
    void progress(int64_t done, int64_t t, const std::string& phase) override {
        if (phase == "train") last_done = done, total = t;
    }
};

TEST(DemoTrainer, LossFallsAndEverythingIsReported) {
    Recorder sink;
    CancellationToken cancel;
    const DemoTrainingResult r = train_demo_model(tiny(), sink, cancel);
    EXPECT_EQ(r.steps, 40);
    const auto& loss = sink.metrics["train/loss"];
    ASSERT_EQ(loss.size(), 40u);
    EXPECT_LT(loss.back(), loss.front() - 0.5);  // from ~ln 48 towards the digit entropy
    EXPECT_EQ(sink.metrics["train/lr"].size(), 40u);
    EXPECT_EQ(sink.metrics["train/grad_norm"].size(), 40u);
    EXPECT_EQ(sink.metrics["eval/exact_match/*"].size(), 1u);  // at step 20, not at the end
    EXPECT_EQ(sink.last_done, 40);
    EXPECT_EQ(sink.total, 40);
}

TEST(DemoTrainer, SameSeedSameWeights) {
    DemoTrainingConfig c = tiny();
    c.steps = 5;
    c.eval_every = 0;
    NullJobSink sink;
    CancellationToken cancel;
    const auto a = train_demo_model(c, sink, cancel), b = train_demo_model(c, sink, cancel);
    const auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
    c.seed = 4;
    const auto d = train_demo_model(c, sink, cancel);
    EXPECT_FALSE(at::equal(d.model->named_parameters()[0].second, pa[0].second));
}

TEST(DemoTrainer, CancellationStopsBeforeTheNextStep) {
    struct Canceller : JobSink {
        CancellationToken* token;
        int64_t last = 0;
        void progress(int64_t done, int64_t, const std::string&) override {
            last = done;
            if (done == 3) token->cancel();
        }
    } sink;
    CancellationToken cancel;
    sink.token = &cancel;
    EXPECT_THROW(train_demo_model(tiny(), sink, cancel), JobCancelled);
    EXPECT_EQ(sink.last, 3);
}

}  // namespace
}  // namespace ql
