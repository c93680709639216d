// SPDX-License-Identifier: GPL-3.0-or-later
// LinearProduct/<n> and LinearAtLinear/<n>: a linear layer's product x · wᵀ for x [256, in] and
// the real SmolLM2-135M's shapes (n: 0 its attention projections 576 -> 576, 1 its MLP 576 -> 1536,
// 2 its tied head 576 -> 49152), by engine/models/matrix_products.h (oneDNN with Debian's
// LibTorch) against at::linear (LibTorch's BLAS) in the same run. HeadProduct and HeadMatmul:
// attention's scores for 9 query heads sharing 3 key heads over 256 tokens, head_product against
// transformers' repeat_kv + at::matmul. FLOPs processed: 2 · rows · in · out per product.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <array>

#include "engine/core/engine_runtime.h"
#include "engine/models/matrix_products.h"

namespace {

constexpr int64_t kRows = 256;
constexpr int64_t kShapes[][2] = {{576, 576}, {576, 1536}, {576, 49152}};  // {in, out}

struct LinearOperands {
    at::Tensor x, w;
};

const LinearOperands& operands(int64_t shape) {
    static const std::array<LinearOperands, 3> all = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(0);
        std::array<LinearOperands, 3> r;
        for (size_t i = 0; i < r.size(); ++i)
            r[i] = {at::randn({kRows, kShapes[i][0]}), at::randn({kShapes[i][1], kShapes[i][0]})};
        return r;
    }();
    return all[static_cast<size_t>(shape)];
}

void set_flops(benchmark::State& state, int64_t shape) {
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kRows * kShapes[shape][0] * kShapes[shape][1] * 1e-9 *
                                                       static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
}

void BM_LinearProduct(benchmark::State& state) {
    const LinearOperands& o = operands(state.range(0));
    at::InferenceMode inference;
    for (auto _ : state) benchmark::DoNotOptimize(ql::linear_product(o.x, o.w, at::Tensor()));
    set_flops(state, state.range(0));
}

void BM_LinearAtLinear(benchmark::State& state) {
    const LinearOperands& o = operands(state.range(0));
    at::InferenceMode inference;
    for (auto _ : state) benchmark::DoNotOptimize(at::linear(o.x, o.w));
    set_flops(state, state.range(0));
}

struct HeadOperands {
    at::Tensor q, k;
};

const HeadOperands& heads() {
    static const HeadOperands h = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(1);
        // q as split_heads leaves it: [1, 9, 256, 64] viewed from [1, 256, 9, 64].
        return HeadOperands{at::randn({1, kRows, 9, 64}).transpose(1, 2), at::randn({1, 3, kRows, 64})};
    }();
    return h;
}

void BM_HeadProduct(benchmark::State& state) {
    at::InferenceMode inference;
    for (auto _ : state) benchmark::DoNotOptimize(ql::head_product(heads().q, heads().k, true, 0.125));
}

void BM_HeadMatmul(benchmark::State& state) {
    at::InferenceMode inference;
    for (auto _ : state)
        benchmark::DoNotOptimize(at::matmul(heads().q, heads().k.repeat_interleave(3, 1).transpose(-1, -2)) * 0.125);
}

}  // namespace

BENCHMARK(BM_LinearProduct)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearAtLinear)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HeadProduct)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HeadMatmul)->Unit(benchmark::kMillisecond)->UseRealTime();
