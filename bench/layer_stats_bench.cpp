// SPDX-License-Identifier: GPL-3.0-or-later
// LayerStats/*: tensor_statistics and format_fit on one 7168 x 7168 float32 tensor (51.4 M
// elements, a large LLM projection), with a memcpy of the same bytes measured in the same run as
// the baseline (docs/STATISTICS.md "Speed"). Target: tensor_statistics <= 0.5 s on 2 threads
// (OMP_NUM_THREADS=2). Bytes processed = bytes read, so the rate compares with Memcpy's read rate.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstring>

#include "engine/core/engine_runtime.h"
#include "engine/api/layer_stats_api.h"
#include "kernels/parallel.h"

namespace {

constexpr int64_t kRows = 7168, kCols = 7168, kElements = kRows * kCols;

const at::Tensor& weights() {
    static const at::Tensor x = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(0);
        at::Tensor w = at::randn({kRows, kCols}) * 0.02;
        w.index_put_({123, 4567}, 1.5);  // an outlier, as real weights have
        return w;
    }();
    return x;
}

at::Tensor& copy_target() {
    static at::Tensor y = at::ones({kRows, kCols});  // touched once: no page faults in the loop
    return y;
}

void BM_StatsMemcpy(benchmark::State& state) {
    const float* src = weights().data_ptr<float>();
    float* dst = copy_target().data_ptr<float>();
    for (auto _ : state) {
        ql::kernels::parallel_ranges(kElements, int64_t{1} << 20, 1024, [&](int64_t b, int64_t e) {
            std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
        });
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 4);
}

void BM_TensorStatistics(benchmark::State& state) {
    const float* w = weights().data_ptr<float>();
    for (auto _ : state) {
        ql::TensorStatistics s = ql::tensor_statistics(w, kRows, kCols, 16, 128);
        benchmark::DoNotOptimize(s.amax);
    }
    state.SetBytesProcessed(state.iterations() * kElements * 4);
}

void BM_FormatFit(benchmark::State& state, const std::string& format) {
    const float* w = weights().data_ptr<float>();
    for (auto _ : state) {
        ql::FormatFit f = ql::format_fit(w, kRows, kCols, format, nullptr, 0);
        benchmark::DoNotOptimize(f.weight_mse);
    }
    state.SetBytesProcessed(state.iterations() * kElements * 4);
}

const int kRegistered = [] {
    benchmark::RegisterBenchmark("LayerStats/Memcpy", BM_StatsMemcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("LayerStats/TensorStatistics", BM_TensorStatistics)->Unit(benchmark::kMillisecond)->UseRealTime();
    for (const char* f : {"nvfp4", "mxfp4", "int8"})
        benchmark::RegisterBenchmark(("LayerStats/FormatFit/" + std::string(f)).c_str(), BM_FormatFit, std::string(f))
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(2);
    return 0;
}();

}  // namespace
