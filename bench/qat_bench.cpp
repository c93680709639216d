// SPDX-License-Identifier: GPL-3.0-or-later
// QAT and QAD training-step cost against a plain FP32 training step, all timed alternately in
// the same iterations (the machine's speed drifts):
//   QuantTrainStep/<model>/<recipe>   counters qat_x_fp = QAT step / FP step (target <= 1.3) and
//                                qad_x_qat = QAD step / QAT step (target <= 1.6: the teacher adds
//                                one forward and the KL), fake_quant_share = (QAT - FP) / QAT
// A step is forward + loss + backward + AdamW update (the trainer's work, engine/train).
// Models with random weights: the demo decoder (batch 64 x 32 tokens) and a GPT-2-small-shaped
// model (batch 4 x 128); static input amax set to 4 (calibration is not what is timed).
#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <chrono>

#include "engine/core/engine_runtime.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"
#include "engine/train/adamw.h"
#include "engine/train/distillation_loss.h"

namespace {

using Clock = std::chrono::steady_clock;

double timed_step(ql::Model& student, ql::Model* teacher, ql::AdamW& opt, const at::Tensor& ids) {
    const auto t0 = Clock::now();
    const int64_t vocab = student.config().vocab_size;
    const at::Tensor in = ids.narrow(1, 0, ids.size(1) - 1), target = ids.narrow(1, 1, ids.size(1) - 1);
    opt.zero_grad();
    const at::Tensor logits = student.forward(in);
    at::Tensor loss;
    if (teacher) {
        at::Tensor t;
        {
            at::NoGradGuard no_grad;
            t = teacher->forward(in);
        }
        loss = ql::distillation_kl(t, logits, at::ones_like(target, at::kBool), 1.0);
    } else {
        loss = at::cross_entropy_loss(logits.reshape({-1, vocab}), target.reshape({-1}));
    }
    loss.backward();
    opt.step(1e-5);
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

void BM_TrainStep(benchmark::State& state, const std::string& which, const std::string& recipe) {
    ql::initialise_engine_runtime();
    const bool demo = which == "demo";
    const ql::ModelConfig config = demo ? ql::demo_decoder_config() : ql::gpt2_small_config();
    auto student = ql::create_model(config, 1);
    auto teacher = ql::create_model(config, 1);
    ql::QuantizedModel q(*student, ql::load_recipe(recipe));
    for (const auto& l : q.layers()) l->set_input_amax(4.0f);
    const at::Tensor ids = at::randint(0, config.vocab_size, {demo ? 64 : 4, demo ? 33 : 129}, at::kLong);
    std::vector<at::Tensor> params;
    for (const auto& [name, p] : student->named_parameters()) params.push_back(p);
    student->set_requires_grad(true);
    ql::AdamW opt(params, ql::AdamWOptions{});
    double fp = 0, qat = 0, qad = 0;
    for (auto _ : state) {
        q.set_enabled(false);
        fp += timed_step(*student, nullptr, opt, ids);
        q.set_enabled(true);
        qat += timed_step(*student, nullptr, opt, ids);
        qad += timed_step(*student, teacher.get(), opt, ids);
    }
    student->set_requires_grad(false);
    const double n = double(state.iterations());
    state.counters["fp_ms"] = 1e3 * fp / n;
    state.counters["qat_ms"] = 1e3 * qat / n;
    state.counters["qad_ms"] = 1e3 * qad / n;
    state.counters["qat_x_fp"] = qat / fp;
    state.counters["qad_x_qat"] = qad / qat;
    // The quantizers' share of the QAT step: what turning them on added (fake quant of weights
    // and inputs in the forward, the straight-through backward), as a fraction of the step.
    state.counters["fake_quant_share"] = (qat - fp) / qat;
}

const int kRegistered = [] {
    for (const std::string which : {"demo", "gpt2_small"})
        for (const std::string recipe : {"NVFP4_DEFAULT", "FP8_DEFAULT", "INT4_AWQ"}) {
            if (which == "demo" && recipe == "INT4_AWQ") continue;  // group 128 does not divide the demo's 192
            benchmark::RegisterBenchmark(("QuantTrainStep/" + which + "/" + recipe).c_str(), BM_TrainStep, which, recipe)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(which == "demo" ? 20 : 3)
                ->UseRealTime();
        }
    return 0;
}();

}  // namespace
