// SPDX-License-Identifier: GPL-3.0-or-later
// HadamardMemcpy, Hadamard/<block> and HadamardTorchOps/<block> on one float32 tensor of 16 Mi
// elements in rows of 4096: the fast Walsh-Hadamard kernel (kernels/hadamard.h) against a copy of
// the same bytes with the same threads (the bandwidth bound) and against the same transform as a
// LibTorch product with the dense [block, block] Hadamard matrix (what rotations cost without the
// kernel). Bytes processed = bytes read + bytes written.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstring>

#include "engine/core/engine_runtime.h"
#include "engine/quant/hadamard_transform.h"
#include "kernels/hadamard.h"
#include "kernels/parallel.h"

namespace {

constexpr int64_t kCols = 4096;
constexpr int64_t kElements = int64_t{16} << 20;  // 16 Mi float32 = 64 MiB

const at::Tensor& input() {
    static const at::Tensor x = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(0);
        return at::randn({kElements / kCols, kCols});
    }();
    return x;
}

at::Tensor& output() {
    static at::Tensor y = at::ones({kElements / kCols, kCols});  // touched once: no page faults in the loop
    return y;
}

void BM_HadamardMemcpy(benchmark::State& state) {
    const float* src = input().data_ptr<float>();
    float* dst = output().data_ptr<float>();
    for (auto _ : state) {
        ql::kernels::parallel_ranges(kElements, int64_t{1} << 20, 1024, [&](int64_t b, int64_t e) {
            std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
        });
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

void BM_Hadamard(benchmark::State& state) {
    const ql::kernels::HadamardLayout L{kElements / kCols, kCols, state.range(0)};
    const float* src = input().data_ptr<float>();
    float* dst = output().data_ptr<float>();
    for (auto _ : state) {
        ql::kernels::hadamard_rows(src, dst, L);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

void BM_HadamardTorchOps(benchmark::State& state) {
    const int64_t b = state.range(0);
    const at::Tensor h = ql::hadamard_matrix(b);
    for (auto _ : state) {
        at::Tensor y = at::matmul(input().view({-1, kCols / b, b}), h);
        benchmark::DoNotOptimize(y.data_ptr());
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

const int kRegistered = [] {
    benchmark::RegisterBenchmark("HadamardMemcpy", BM_HadamardMemcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
    for (int64_t b : {16, 128, 512, 4096}) {
        benchmark::RegisterBenchmark("Hadamard", BM_Hadamard)->Arg(b)->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark("HadamardTorchOps", BM_HadamardTorchOps)->Arg(b)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    return 0;
}();

}  // namespace
