// SPDX-License-Identifier: GPL-3.0-or-later
// Memcpy, FakeQuant/<format> and FakeQuantTorchOps/<format> on one float32 tensor of 64 Mi
// elements. Bytes processed = bytes read + bytes written, so every result is directly
// comparable with Memcpy's bandwidth measured in the same run. FakeQuant/<format> runs the
// kernels' active CPU clone (named in the report's context, bench_context.cpp);
// KernelClone/<clone>/<format> runs each other clone this CPU supports on the same data.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <functional>

#include "app/openmp_wait_policy.h"
#include "bench/fake_quant_formats.h"
#include "bench/torch_ops_formats.h"
#include "engine/core/engine_runtime.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/parallel.h"

namespace {

constexpr int64_t kElements = int64_t{64} << 20;  // 64 Mi float32 = 256 MiB

const at::Tensor& input() {
    static const at::Tensor x = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(0);
        return at::randn({kElements / 4096, 4096});
    }();
    return x;
}

// A second buffer, touched once so that no benchmark pays for page faults (PERF.md lesson 3).
at::Tensor& output() {
    static at::Tensor y = at::ones({kElements / 4096, 4096});
    return y;
}

// The same threads the kernels use, each copying one contiguous range.
void copy_input_to_output() {
    const float* src = input().data_ptr<float>();
    float* dst = output().data_ptr<float>();
    ql::kernels::parallel_ranges(kElements, int64_t{1} << 20, 1024, [&](int64_t b, int64_t e) {
        std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
    });
    benchmark::ClobberMemory();
}

void BM_Memcpy(benchmark::State& state) {
    input();  // made (randn) outside the measured loop
    output();
    for (auto _ : state) copy_input_to_output();
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

double seconds_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Each iteration also times one memcpy of the same buffers, outside the measured time: the
// counter x_memcpy (memcpy time / fake-quant time, summed over the iterations) compares the two
// within seconds of each other. This machine's memory bandwidth drifts by 2x over a minute
// (other tenants), so a ratio to the single Memcpy benchmark at the start of the run moved by as
// much as the kernels' own differences.
void BM_FakeQuant(benchmark::State& state, const ql::QuantOptions& options) {
    const ql::QuantSpec spec = ql::resolve_spec(options, ql::shape_of(input()));
    at::Tensor& out = output();
    double quantize_s = 0, memcpy_s = 0;
    for (auto _ : state) {
        quantize_s += seconds_of([&] {
            ql::fake_quantize_into(input(), out, spec);
            benchmark::ClobberMemory();
        });
        state.PauseTiming();
        memcpy_s += seconds_of(copy_input_to_output);
        state.ResumeTiming();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
    state.counters["x_memcpy"] = memcpy_s / quantize_s;
}

// The same with another clone than the active one (restored afterwards).
void BM_KernelClone(benchmark::State& state, ql::kernels::CpuClone clone, const ql::QuantOptions& options) {
    const ql::kernels::CpuClone active = ql::kernels::active_cpu_clone();
    ql::kernels::set_cpu_clone(clone);
    BM_FakeQuant(state, options);
    ql::kernels::set_cpu_clone(active);
}

void BM_FakeQuantTorchOps(benchmark::State& state, const std::string& format) {
    for (auto _ : state) {
        at::Tensor y = ql::bench::torch_ops_fake_quant(input(), format);
        benchmark::DoNotOptimize(y.data_ptr());
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

const int kRegistered = [] {
    benchmark::RegisterBenchmark("Memcpy", BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
    for (const auto& c : ql::bench::fake_quant_configs())
        benchmark::RegisterBenchmark(("FakeQuant/" + c.name).c_str(), BM_FakeQuant, c.options)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    for (ql::kernels::CpuClone clone : ql::kernels::cpu_clones()) {
        if (clone == ql::kernels::active_cpu_clone() || !ql::kernels::cpu_clone_supported(clone)) continue;
        for (const auto& c : ql::bench::fake_quant_configs())
            if (!c.gguf)
                benchmark::RegisterBenchmark(
                    ("KernelClone/" + std::string(ql::kernels::cpu_clone_name(clone)) + "/" + c.name).c_str(),
                    BM_KernelClone, clone, c.options)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
    }
    for (const auto& f : ql::bench::torch_ops_formats())
        benchmark::RegisterBenchmark(("FakeQuantTorchOps/" + f).c_str(), BM_FakeQuantTorchOps, f)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(1)
            ->Repetitions(2);
    return 0;
}();

}  // namespace

// As the applications do (app/openmp_wait_policy.h): measured with the default spinning policy,
// OpenMP's idle workers and OpenBLAS's threads fought over the two cores and the demo's training
// step ran 9x slower than quantlab-cli trains it.
int main(int argc, char** argv) {
    ql::ensure_passive_openmp_wait(argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
