// SPDX-License-Identifier: GPL-3.0-or-later
// GPTQ on one 4096 x 4096 Linear, timed against one 4096 x 4096 x 4096 float32 at::mm measured
// in the same process just before and after each benchmark (counter x_matmul = time / mean of
// the two matmul times, matmul_s = that mean; docs/BENCHMARKS.md).
//   Gptq/Matmul4096                  the baseline: at::mm of two 4096 x 4096 float32 matrices
//   Gptq/HessianAccumulate/128x512   HessianAccumulator::add of 128 calibration sequences of
//                                    512 tokens ([512, 4096] each)
//   Gptq/<format>/4096x4096          gptq_quantize with that Hessian (block 128, damp 1 %)
// The calibration inputs are 16 random sequences (normal values with per-channel scales
// exp(N(0, 0.5)) and a random channel mixing, so H is dense) added 8 times each: the timing does
// not depend on the values, and 1 GiB of distinct inputs would mostly time the random generator.
// Two intra-op threads (at::set_num_threads(2)), as PERF.md's machine has.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <utility>
#include <vector>

#include "engine/core/engine_runtime.h"
#include "engine/formats/format_codec.h"
#include "engine/ptq/gptq.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kDim = 4096;
constexpr int64_t kSequences = 128, kTokens = 512, kDistinct = 16;

void setup_runtime() {
    static const bool done = [] {
        ql::initialise_engine_runtime();
        at::set_num_threads(2);
        return true;
    }();
    (void)done;
}

// Seconds for one at::mm of 4096^3 right now. This machine's speed drifts with other load within
// a run (PERF.md), so every benchmark times one before and one after itself and divides by their
// mean.
double matmul_once() {
    static const std::pair<at::Tensor, at::Tensor> ab = [] {
        setup_runtime();
        at::manual_seed(0);
        std::pair<at::Tensor, at::Tensor> m{at::randn({kDim, kDim}), at::randn({kDim, kDim})};
        at::Tensor warm = at::mm(m.first, m.second);
        benchmark::DoNotOptimize(warm.data_ptr());
        return m;
    }();
    const auto t0 = Clock::now();
    at::Tensor c = at::mm(ab.first, ab.second);
    benchmark::DoNotOptimize(c.data_ptr());
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

const std::vector<at::Tensor>& calibration_sequences() {
    static const std::vector<at::Tensor> seqs = [] {
        setup_runtime();
        at::manual_seed(1);
        const at::Tensor scales = (at::randn({kDim}) * 0.5).exp();
        const at::Tensor mixing = at::eye(kDim) + at::randn({kDim, kDim}) * (0.5 / 64.0);
        std::vector<at::Tensor> v;
        for (int64_t s = 0; s < kDistinct; ++s) v.push_back(at::mm(at::randn({kTokens, kDim}) * scales, mixing));
        return v;
    }();
    return seqs;
}

at::Tensor accumulate_hessian() {
    ql::HessianAccumulator acc(kDim);
    const auto& seqs = calibration_sequences();
    for (int64_t s = 0; s < kSequences; ++s) acc.add(seqs[static_cast<size_t>(s % kDistinct)]);
    return acc.hessian();
}

// The Hessian the Gptq benchmarks use: HessianAccumulate's result, or accumulated untimed when
// that benchmark is filtered out.
at::Tensor& hessian() {
    static at::Tensor h;
    return h;
}

const at::Tensor& hessian_for_gptq() {
    if (!hessian().defined()) hessian() = accumulate_hessian();
    return hessian();
}

void set_ratio(benchmark::State& state, double seconds, double matmul_before, double matmul_after) {
    const double matmul = (matmul_before + matmul_after) / 2;
    state.counters["x_matmul"] = seconds / static_cast<double>(state.iterations()) / matmul;
    state.counters["matmul_s"] = matmul;
}

void BM_Matmul(benchmark::State& state) {
    const double before = matmul_once();
    double seconds = 0;
    for (auto _ : state) seconds += matmul_once();
    set_ratio(state, seconds, before, matmul_once());
}

void BM_HessianAccumulate(benchmark::State& state) {
    calibration_sequences();
    const double before = matmul_once();
    double seconds = 0;
    at::Tensor h;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        h = accumulate_hessian();
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    hessian() = h;  // the Gptq benchmarks reuse it
    set_ratio(state, seconds, before, matmul_once());
}

void BM_Gptq(benchmark::State& state, const std::string& format, bool act_order) {
    const at::Tensor& h = hessian_for_gptq();
    at::manual_seed(2);
    const at::Tensor w = at::randn({kDim, kDim}) * 0.02;
    ql::QuantOptions o;
    o.format = format;
    if (format == "int4") {
        o.granularity = "group";
        o.group_size = 128;
    }
    const ql::QuantSpec spec = ql::resolve_spec(o, {kDim, kDim});
    ql::GptqOptions g;
    g.act_order = act_order;
    const ql::CancellationToken never;
    const double before = matmul_once();
    double seconds = 0, loss = 0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        const ql::GptqResult r = ql::gptq_quantize(w, h, spec, g, never);
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        loss = r.proxy_loss;
        benchmark::DoNotOptimize(r.weight.data_ptr());
    }
    set_ratio(state, seconds, before, matmul_once());
    state.counters["proxy_loss"] = loss;
}

const int kRegistered = [] {
    benchmark::RegisterBenchmark("Gptq/Matmul4096", BM_Matmul)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
    benchmark::RegisterBenchmark("Gptq/HessianAccumulate/128x512", BM_HessianAccumulate)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark("Gptq/int4_g128/4096x4096", BM_Gptq, std::string("int4"), false)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark("Gptq/int4_g128_act_order/4096x4096", BM_Gptq, std::string("int4"), true)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark("Gptq/nvfp4/4096x4096", BM_Gptq, std::string("nvfp4"), false)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
    return 0;
}();

}  // namespace
