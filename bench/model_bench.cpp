// SPDX-License-Identifier: GPL-3.0-or-later
// Model forward throughput against the machine's matmul speed measured in the same run.
//   MatmulFlops/<model>/batch:B  every Linear of one forward as a bare GEMM (at::linear on
//                                [B*T, in] inputs): the achievable FLOP/s for exactly the model's
//                                matmul shapes, i.e. the model's matmul FLOP bound
//   Forward/<model>/batch:B      the model's forward (no grad): tokens/s, achieved FLOP/s and
//                                vs_gemm = achieved FLOP/s / MatmulFlops FLOP/s (1.0 = the
//                                forward runs as fast as its GEMMs alone)
//   TrainStep/demo/batch:B       forward + backward of the demo decoder (next-token loss)
// Model FLOPs = 2 x B x T x in x out per Linear (lm_head included) + 4 x B x T^2 x heads x
// head_dim per attention layer (full T x T scores, as computed). Models: the demo decoder (T 64)
// and a GPT-2-small-shaped model (12 layers, 768 wide, vocab 50257, T 256), random weights.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>

#include "engine/core/engine_runtime.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchModel {
    std::unique_ptr<ql::Model> model;
    int64_t seq = 0;
};

BenchModel& bench_model(const std::string& which) {
    static std::map<std::string, BenchModel> models;
    auto it = models.find(which);
    if (it != models.end()) return it->second;
    ql::initialise_engine_runtime();
    BenchModel m;
    if (which == "demo") {
        m.model = ql::create_model(ql::demo_decoder_config(), 1);
        m.seq = 64;
    } else {
        m.model = ql::create_model(ql::gpt2_small_config(), 1);
        m.seq = 256;
    }
    return models.emplace(which, std::move(m)).first->second;
}

double linear_flops(const ql::Model& m, int64_t tokens) {
    double f = 0;
    for (const ql::LinearLayer* l : m.linear_layers()) f += 2.0 * tokens * l->weight.size(0) * l->weight.size(1);
    return f;
}

double model_flops(const ql::Model& m, int64_t batch, int64_t seq) {
    const ql::ModelConfig& c = m.config();
    const double attention = 4.0 * batch * seq * seq * c.num_heads * c.head_dim * c.num_layers;
    return linear_flops(m, batch * seq) + attention;
}

// One pass over the model's GEMMs; inputs allocated once per shape.
struct GemmSet {
    std::vector<std::pair<at::Tensor, const ql::LinearLayer*>> work;
    GemmSet(const ql::Model& m, int64_t tokens) {
        std::map<int64_t, at::Tensor> inputs;
        for (const ql::LinearLayer* l : m.linear_layers()) {
            const int64_t in = l->weight.size(1);
            if (!inputs.count(in)) inputs[in] = at::randn({tokens, in});
            work.emplace_back(inputs[in], l);
        }
    }
    void run() const {
        for (const auto& [x, l] : work) {
            at::Tensor y = at::linear(x, l->weight, l->bias);
            benchmark::DoNotOptimize(y.data_ptr());
        }
    }
};

// The GEMM rate for the model's shapes: best of a few passes (also what MatmulFlops reports).
double gemm_flops_per_s(const std::string& which, int64_t batch) {
    static std::map<std::pair<std::string, int64_t>, double> cache;
    const auto key = std::make_pair(which, batch);
    if (cache.count(key)) return cache[key];
    BenchModel& bm = bench_model(which);
    const GemmSet gemms(*bm.model, batch * bm.seq);
    double best = 1e30;
    gemms.run();  // warm-up
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        gemms.run();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return cache[key] = linear_flops(*bm.model, batch * bm.seq) / best;
}

void BM_MatmulFlops(benchmark::State& state, const std::string& which) {
    BenchModel& bm = bench_model(which);
    const int64_t batch = state.range(0);
    const GemmSet gemms(*bm.model, batch * bm.seq);
    at::NoGradGuard no_grad;
    for (auto _ : state) gemms.run();
    state.counters["FLOP/s"] =
        benchmark::Counter(linear_flops(*bm.model, batch * bm.seq), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Forward(benchmark::State& state, const std::string& which) {
    BenchModel& bm = bench_model(which);
    const int64_t batch = state.range(0);
    at::NoGradGuard no_grad;
    const at::Tensor ids = at::randint(0, bm.model->config().vocab_size, {batch, bm.seq}, at::kLong);
    const double gemm = gemm_flops_per_s(which, batch);
    double seconds = 0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        at::Tensor logits = bm.model->forward(ids);
        benchmark::DoNotOptimize(logits.data_ptr());
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    const double flops = model_flops(*bm.model, batch, bm.seq);
    state.counters["tokens/s"] = benchmark::Counter(double(batch * bm.seq), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["gemm_FLOP/s"] = gemm;
    state.counters["vs_gemm"] = flops * double(state.iterations()) / seconds / gemm;
}

void BM_TrainStep(benchmark::State& state, const std::string& which) {
    BenchModel& bm = bench_model(which);
    const int64_t batch = state.range(0);
    const int64_t vocab = bm.model->config().vocab_size;
    const at::Tensor ids = at::randint(0, vocab, {batch, bm.seq}, at::kLong);
    bm.model->set_requires_grad(true);
    for (auto _ : state) {
        const at::Tensor logits = bm.model->forward(ids.narrow(1, 0, bm.seq - 1));
        const at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, vocab}), ids.narrow(1, 1, bm.seq - 1).reshape({-1}));
        loss.backward();
        for (const auto& [name, p] : bm.model->named_parameters()) p.mutable_grad().reset();
    }
    bm.model->set_requires_grad(false);
    // Forward + backward ~ 3x the forward's FLOPs.
    state.counters["tokens/s"] = benchmark::Counter(double(batch * bm.seq), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["FLOP/s"] =
        benchmark::Counter(3 * model_flops(*bm.model, batch, bm.seq), benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
    for (const auto& [which, batches] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"demo", {16}}, {"gpt2_small", {1, 4}}}) {
        for (int64_t b : batches) {
            benchmark::RegisterBenchmark(("MatmulFlops/" + which).c_str(), BM_MatmulFlops, which)
                ->ArgName("batch")->Arg(b)->Unit(benchmark::kMillisecond)->UseRealTime();
            benchmark::RegisterBenchmark(("Forward/" + which).c_str(), BM_Forward, which)
                ->ArgName("batch")->Arg(b)->Unit(benchmark::kMillisecond)->UseRealTime();
        }
    }
    benchmark::RegisterBenchmark("TrainStep/demo", BM_TrainStep, std::string("demo"))
        ->ArgName("batch")->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
    return 0;
}();

}  // namespace
