// SPDX-License-Identifier: GPL-3.0-or-later
// The real SmolLM2-135M-Instruct (the GGUF of QUANTLAB_SMOLLM2_GGUF, decoded to float32; its
// path comes from scripts/peers-env), the speeds issue 39 compares with transformers and
// llama.cpp (scripts/real-model-bench runs these beside the peers, alternating, and prints the
// ratios; docs/BENCHMARKS.md "The real model"):
//   RealModel/Forward/T         one forward of [1, T] tokens (eval's work): tokens/s
//   RealModel/Generate/P/N      greedy generation after a P-token prompt, N new tokens, KV cache:
//                               ttft_ms (prefill + first choice) and decode_tok_s
//   RealModel/QadStep/B/T       one QAD step of NVFP4 W4A4 (NVFP4_DEFAULT, input amax fixed) on
//                               [B, T] tokens: the FP teacher's forward, the student's forward,
//                               KL, backward, AdamW: step_ms (the best step after an untimed one)
// Without QUANTLAB_SMOLLM2_GGUF the benchmarks report an error and measure nothing.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "engine/core/engine_runtime.h"
#include "engine/generation/text_generator.h"
#include "engine/loading/model_source.h"
#include "engine/quant/quantized_model.h"
#include "engine/train/adamw.h"
#include "engine/train/distillation_loss.h"

namespace {

using RealClock = std::chrono::steady_clock;

const char* real_model_path() { return std::getenv("QUANTLAB_SMOLLM2_GGUF"); }

ql::OpenedModel& real_model() {
    static std::unique_ptr<ql::OpenedModel> m;
    if (!m) {
        ql::initialise_engine_runtime();
        m = std::make_unique<ql::OpenedModel>(ql::open_model(real_model_path()));
    }
    return *m;
}

at::Tensor real_ids(int64_t batch, int64_t tokens) {
    return at::randint(100, 40000, {batch, tokens}, at::TensorOptions().dtype(at::kLong));
}

void BM_RealForward(benchmark::State& state) {
    if (!real_model_path()) return state.SkipWithError("QUANTLAB_SMOLLM2_GGUF is not set (eval \"$(scripts/peers-env)\")");
    ql::OpenedModel& m = real_model();
    const int64_t t = state.range(0);
    const at::Tensor ids = real_ids(1, t);
    c10::InferenceMode inference;
    // One untimed call first, as the peers' side of scripts/real-model-bench does: the first
    // forward pays for first-touch page faults of its activations and the BLAS threads' start.
    benchmark::DoNotOptimize(m.model->forward(ids));
    for (auto _ : state) benchmark::DoNotOptimize(m.model->forward(ids));
    state.counters["tok_s"] = benchmark::Counter(double(t) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_RealGenerate(benchmark::State& state) {
    if (!real_model_path()) return state.SkipWithError("QUANTLAB_SMOLLM2_GGUF is not set (eval \"$(scripts/peers-env)\")");
    ql::OpenedModel& m = real_model();
    const at::Tensor prompt = real_ids(1, state.range(0));
    const std::vector<int64_t> ids(prompt.data_ptr<int64_t>(), prompt.data_ptr<int64_t>() + prompt.numel());
    ql::GenerationSettings s;
    s.max_new_tokens = state.range(1);
    s.alternatives = 0;
    ql::ModelText text = m.text;
    text.end_ids.clear();  // always N tokens
    double ttft = 0, decode = 0;
    int64_t decoded = 0;
    {
        ql::GenerationSettings warm = s;  // untimed, as transformers' side warms up with 2 tokens
        warm.max_new_tokens = 2;
        ql::generate_text(*m.model, text, ids, warm, {}, {});
    }
    for (auto _ : state) {
        const ql::GenerationResult r = ql::generate_text(*m.model, text, ids, s, {}, {});
        ttft += r.prefill_seconds;
        decode += r.decode_seconds;
        decoded += static_cast<int64_t>(r.tokens.size()) - 1;
    }
    state.counters["ttft_ms"] = 1e3 * ttft / double(state.iterations());
    state.counters["decode_tok_s"] = double(decoded) / decode;
}

void BM_RealQadStep(benchmark::State& state) {
    if (!real_model_path()) return state.SkipWithError("QUANTLAB_SMOLLM2_GGUF is not set (eval \"$(scripts/peers-env)\")");
    ql::initialise_engine_runtime();
    ql::OpenedModel teacher = ql::open_model(real_model_path());
    ql::OpenedModel student = ql::open_model(real_model_path());
    ql::QuantizedModel q(*student.model, ql::load_recipe("NVFP4_DEFAULT"));
    for (const auto& l : q.layers()) l->set_input_amax(8.0f);
    const at::Tensor ids = real_ids(state.range(0), state.range(1) + 1);
    const at::Tensor in = ids.narrow(1, 0, ids.size(1) - 1);
    std::vector<at::Tensor> params;
    for (const auto& [name, p] : student.model->named_parameters()) params.push_back(p);
    student.model->set_requires_grad(true);
    ql::AdamW opt(params, ql::AdamWOptions{});
    const auto step = [&] {
        opt.zero_grad();
        at::Tensor t;
        {
            at::NoGradGuard no_grad;
            t = teacher.model->forward(in);
        }
        const at::Tensor loss = ql::distillation_kl(t, student.model->forward(in), at::ones({in.size(0), in.size(1)}, at::kBool), 1.0);
        loss.backward();
        opt.step(1e-5);
    };
    step();  // untimed: the peer's figure is the best step after its first (AdamW's state allocated)
    double best = 1e30;
    for (auto _ : state) {
        const auto t0 = RealClock::now();
        step();
        best = std::min(best, std::chrono::duration<double>(RealClock::now() - t0).count());
    }
    student.model->set_requires_grad(false);
    state.counters["step_ms"] = 1e3 * best;
}

const int kRealRegistered = [] {
    benchmark::RegisterBenchmark("RealModel/Forward/512", BM_RealForward)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
    benchmark::RegisterBenchmark("RealModel/Generate/64/64", BM_RealGenerate)
        ->Args({64, 64})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(2)
        ->UseRealTime();
    benchmark::RegisterBenchmark("RealModel/QadStep/4/256", BM_RealQadStep)
        ->Args({4, 256})
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3)
        ->UseRealTime();
    return 0;
}();

}  // namespace
