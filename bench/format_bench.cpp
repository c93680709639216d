// SPDX-License-Identifier: GPL-3.0-or-later
// Memcpy, FakeQuant/<format> and FakeQuantTorchOps/<format> on one float32 tensor of 64 Mi
// elements. Bytes processed = bytes read + bytes written, so every result is directly
// comparable with Memcpy's bandwidth measured in the same run.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstring>

#include "bench/torch_ops_formats.h"
#include "engine/core/engine_runtime.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
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

void BM_Memcpy(benchmark::State& state) {
    const float* src = input().data_ptr<float>();
    float* dst = output().data_ptr<float>();
    for (auto _ : state) {
        // The same threads the kernels use, each copying one contiguous range.
        ql::kernels::parallel_ranges(kElements, int64_t{1} << 20, 1024, [&](int64_t b, int64_t e) {
            std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
        });
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
}

void BM_FakeQuant(benchmark::State& state, const std::string& format) {
    ql::QuantOptions o;
    o.format = format;
    if (format == "int4" || format == "int8") {
        o.granularity = "group";
        o.group_size = 128;
    }
    const ql::QuantSpec spec = ql::resolve_spec(o, ql::shape_of(input()));
    at::Tensor& out = output();
    for (auto _ : state) {
        ql::fake_quantize_into(input(), out, spec);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * kElements * 8);
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
    for (const char* f : {"nvfp4", "mxfp4", "fp8_e4m3", "int4", "nf4", "mxfp8_e4m3", "mxfp6_e2m3", "mxint8", "int8",
                          "fp8_e5m2", "gguf_q4_0", "gguf_q8_0", "gguf_mxfp4", "bf16"})
        benchmark::RegisterBenchmark(("FakeQuant/" + std::string(f)).c_str(), BM_FakeQuant, std::string(f))
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    for (const auto& f : ql::bench::torch_ops_formats())
        benchmark::RegisterBenchmark(("FakeQuantTorchOps/" + f).c_str(), BM_FakeQuantTorchOps, f)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(1)
            ->Repetitions(2);
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
