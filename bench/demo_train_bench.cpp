// SPDX-License-Identifier: GPL-3.0-or-later
// The demo model's training step (`quantlab-cli demo --retrain`, engine/train/demo_trainer.cpp),
// with the ATen AdamW (seven ops per parameter tensor, AdamWOptions::fused = false) and the fused
// one (kernels/adamw_update.h) timed alternately in the same iterations (the machine's speed
// drifts), each on its own copy of the model, on the trainer's batches (64 problems):
//   DemoTrainStep   counters aten_steps_per_s, fused_steps_per_s, fused_x_aten (speed-up), and
//                   for the fused path the share of the step in forward (+ loss), backward,
//                   clip_grad_norm and the AdamW update (*_ms per step)
// Each iteration runs kStepsPerIteration steps of each path.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <memory>

#include "engine/core/engine_runtime.h"
#include "engine/data/dataset.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/train/adamw.h"
#include "engine/train/demo_trainer.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kStepsPerIteration = 10;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Phases {
    double forward = 0, backward = 0, clip = 0, update = 0;
    double total() const { return forward + backward + clip + update; }
};

// One model and its optimizer, stepping as train_demo_model does.
struct Trainer {
    ql::DemoTrainingConfig config = ql::demo_training_config();
    std::unique_ptr<ql::Model> model;
    std::vector<at::Tensor> params;
    std::unique_ptr<ql::AdamW> optimizer;
    int64_t step = 0;

    explicit Trainer(bool fused) {
        model = ql::create_model(config.model, config.seed);
        model->set_requires_grad(true);
        std::vector<bool> decay;
        for (auto& [name, p] : model->named_parameters()) {
            params.push_back(p);
            decay.push_back(p.dim() >= 2);
        }
        ql::AdamWOptions o = config.optimizer;
        o.fused = fused;
        optimizer = std::make_unique<ql::AdamW>(params, o, decay);
    }

    void run(Phases& t) {
        const ql::Dataset batch = ql::make_synthetic_dataset(config.domains, ql::DataSplit::Train, config.seed,
                                                             config.batch_size, step * config.batch_size);
        auto t0 = Clock::now();
        const at::Tensor logits = model->forward(batch.inputs);
        const at::Tensor loss =
            at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), batch.targets.reshape({-1}));
        t.forward += seconds_since(t0);
        t0 = Clock::now();
        optimizer->zero_grad();
        loss.backward();
        benchmark::DoNotOptimize(loss.item<double>());
        t.backward += seconds_since(t0);
        t0 = Clock::now();
        ql::clip_grad_norm(params, config.clip_norm);
        t.clip += seconds_since(t0);
        t0 = Clock::now();
        optimizer->step(1e-3);
        t.update += seconds_since(t0);
        ++step;
    }
};

void BM_DemoTrainStep(benchmark::State& state) {
    ql::initialise_engine_runtime();
    Trainer aten(false), fused(true);
    Phases ta, tf;
    for (auto _ : state)
        for (int64_t k = 0; k < kStepsPerIteration; ++k) {
            aten.run(ta);
            fused.run(tf);
        }
    const double steps = double(state.iterations() * kStepsPerIteration);
    state.counters["aten_steps_per_s"] = steps / ta.total();
    state.counters["fused_steps_per_s"] = steps / tf.total();
    state.counters["fused_x_aten"] = ta.total() / tf.total();
    state.counters["aten_update_ms"] = 1e3 * ta.update / steps;
    state.counters["forward_ms"] = 1e3 * tf.forward / steps;
    state.counters["backward_ms"] = 1e3 * tf.backward / steps;
    state.counters["clip_ms"] = 1e3 * tf.clip / steps;
    state.counters["update_ms"] = 1e3 * tf.update / steps;
}

const int kRegistered = [] {
    benchmark::RegisterBenchmark("DemoTrainStep", BM_DemoTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(10);
    return 0;
}();

}  // namespace
