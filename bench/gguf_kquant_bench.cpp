// SPDX-License-Identifier: GPL-3.0-or-later
// Every GGUF type QuantLab writes, against llama.cpp's own quantizer in the same run
// (docs/BENCHMARKS.md "GGUF quantization against llama.cpp, every type"):
//   GgufEncode/<type>[/imatrix]  encode_gguf_tensor of 512 x 4096 float32 (8 MiB, N(0, 0.02)) on
//                                the OpenMP pool; /imatrix with an importance vector (log-normal,
//                                one per column), as llama-quantize --imatrix passes it
//   GgmlEncode/<type>[/imatrix]  ggml_quantize_chunk of the same input and importance, rows split
//                                over as many std::threads as the pool has (llama-quantize splits
//                                rows over its nthread), from libggml-base.so of the peers venv
//                                ($QUANTLAB_GGML_LIB, else scripts/peers-env); skipped with a
//                                message when it cannot be loaded
//   GgufFakeQuantSearch/<type>   fake quantization (encode + decode) of the same tensor: the
//                                K-quants', IQ4's and the i-quants' searches dominate (IQ2_XXS,
//                                IQ2_XS, IQ1_S with the importance vector they need); compare
//                                with Memcpy8MiB
//   Memcpy8MiB                   memcpy of the same 8 MiB on the same threads (bytes = read +
//                                written, as the FakeQuant benchmarks count)
// Bytes processed = the float32 input (encode) or input + output (fake quantization, memcpy).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/engine_runtime.h"
#include "engine/export/gguf_encode.h"
#include "engine/formats/format_codec.h"
#include "engine/io/gguf_kernel_types.h"
#include "kernels/parallel.h"

namespace {

constexpr int64_t kRows = 512, kCols = 4096;

const std::vector<float>& input() {
    static const std::vector<float> x = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(3);
        const at::Tensor t = at::randn({kRows, kCols}) * 0.02;
        return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    }();
    return x;
}

const std::vector<float>& importance() {
    static const std::vector<float> w = [] {
        at::manual_seed(4);
        const at::Tensor t = at::exp(at::randn({kCols}));
        return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    }();
    return w;
}

// Every type encode_gguf_tensor writes; the K-quants, IQ4 and the i-quants (the search-heavy ones)
// from kFirstSearch on.
const ql::GgmlType kTypes[] = {ql::GgmlType::Q8_0,    ql::GgmlType::Q4_0,   ql::GgmlType::Q4_1,    ql::GgmlType::Q5_0,
                               ql::GgmlType::Q5_1,    ql::GgmlType::MXFP4,  ql::GgmlType::Q2_K,    ql::GgmlType::Q3_K,
                               ql::GgmlType::Q4_K,    ql::GgmlType::Q5_K,   ql::GgmlType::Q6_K,    ql::GgmlType::IQ4_NL,
                               ql::GgmlType::IQ4_XS,  ql::GgmlType::IQ2_XXS, ql::GgmlType::IQ2_XS, ql::GgmlType::IQ2_S,
                               ql::GgmlType::IQ3_XXS, ql::GgmlType::IQ3_S,  ql::GgmlType::IQ1_S,   ql::GgmlType::IQ1_M,
                               ql::GgmlType::TQ1_0,   ql::GgmlType::TQ2_0};
constexpr int kFirstSearch = 6;  // Q2_K

// Types ggml ignores importance for, and types it quantizes only with importance
// (ggml_quantize_requires_imatrix: ggml asserts without; QuantLab refuses).
bool without_importance_path(ql::GgmlType t) {
    return t == ql::GgmlType::Q8_0 || t == ql::GgmlType::MXFP4 || t == ql::GgmlType::TQ1_0 || t == ql::GgmlType::TQ2_0;
}
bool requires_importance(ql::GgmlType t) {
    return t == ql::GgmlType::IQ2_XXS || t == ql::GgmlType::IQ2_XS || t == ql::GgmlType::IQ1_S;
}

std::string label(ql::GgmlType t, bool imatrix) { return std::string(ql::ggml_type_name(t)) + (imatrix ? " imatrix" : ""); }

void GgufEncode(benchmark::State& state) {
    const ql::GgmlType t = kTypes[state.range(0)];
    const bool imatrix = state.range(1) != 0;
    const auto& x = input();
    std::vector<uint8_t> out(*ql::ggml_tensor_bytes(t, {kCols, kRows}));
    // One row first: the i-quants build their search tables once per process (as GgmlEncode
    // calls ggml_quantize_init before timing).
    ql::encode_gguf_tensor(x.data(), 1, kCols, t, out.data(), imatrix ? importance().data() : nullptr);
    for (auto _ : state) {
        ql::encode_gguf_tensor(x.data(), kRows, kCols, t, out.data(), imatrix ? importance().data() : nullptr);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
    state.SetLabel(label(t, imatrix) + ", " + std::to_string(ql::kernels::worker_threads()) + " threads");
}

// ggml.h: size_t ggml_quantize_chunk(enum ggml_type, const float * src, void * dst, int64_t start,
// int64_t nrows, int64_t n_per_row, const float * imatrix); void ggml_quantize_init(enum ggml_type).
using QuantizeChunk = size_t (*)(int, const float*, void*, int64_t, int64_t, int64_t, const float*);
using QuantizeInit = void (*)(int);

// The peers venv's libggml-base.so: $QUANTLAB_GGML_LIB, else what scripts/peers-env prints.
std::string ggml_path() {
    if (const char* p = std::getenv("QUANTLAB_GGML_LIB"); p && *p) return p;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(QUANTLAB_SOURCE_DIR "/scripts/peers-env 2>/dev/null", "r"), pclose);
    if (!pipe) return "";
    char line[4096];
    const std::string key = "export QUANTLAB_GGML_LIB=";
    while (std::fgets(line, sizeof line, pipe.get())) {
        std::string s(line);
        if (s.rfind(key, 0) != 0) continue;
        s = s.substr(key.size());
        while (!s.empty() && (s.back() == '\n' || s.back() == '\'')) s.pop_back();
        if (!s.empty() && s.front() == '\'') s.erase(0, 1);
        return s;
    }
    return "";
}

void GgmlEncode(benchmark::State& state) {
    static const std::string path = ggml_path();
    static void* handle = path.empty() ? nullptr : ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        state.SkipWithError(("cannot load llama.cpp's libggml-base.so (" + (path.empty() ? std::string("no peers venv") : path) +
                             "): set QUANTLAB_GGML_LIB or run scripts/setup-peers")
                                .c_str());
        return;
    }
    const auto chunk = reinterpret_cast<QuantizeChunk>(::dlsym(handle, "ggml_quantize_chunk"));
    const auto init = reinterpret_cast<QuantizeInit>(::dlsym(handle, "ggml_quantize_init"));
    if (!chunk) {
        state.SkipWithError("ggml_quantize_chunk not found");
        return;
    }
    const ql::GgmlType t = kTypes[state.range(0)];
    const bool imatrix = state.range(1) != 0;
    if (init) init(static_cast<int>(t));
    const auto& x = input();
    const float* w = imatrix ? importance().data() : nullptr;
    std::vector<uint8_t> out(*ql::ggml_tensor_bytes(t, {kCols, kRows}));
    const int threads = ql::kernels::worker_threads();
    for (auto _ : state) {
        // Contiguous row ranges, one per thread (llama-quantize's llama_tensor_quantize_impl).
        auto part = [&](int64_t r0, int64_t r1) { chunk(static_cast<int>(t), x.data(), out.data(), r0 * kCols, r1 - r0, kCols, w); };
        std::vector<std::thread> pool;
        const int64_t per = (kRows + threads - 1) / threads;
        for (int k = 1; k < threads; ++k) pool.emplace_back(part, std::min(kRows, k * per), std::min(kRows, (k + 1) * per));
        part(0, std::min(kRows, per));
        for (auto& th : pool) th.join();
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
    state.SetLabel(label(t, imatrix) + ", " + std::to_string(threads) + " threads");
}

void GgufFakeQuantSearch(benchmark::State& state) {
    const ql::GgmlType t = kTypes[state.range(0)];
    const std::string format = ql::gguf_format_name(t);
    ql::QuantOptions o;
    o.format = format;
    ql::QuantSpec spec = ql::resolve_spec(o, {kRows, kCols});
    if (requires_importance(t)) ql::set_importance(spec, importance(), {kRows, kCols}, "bench");
    const auto& x = input();
    std::vector<float> y(x.size(), 1.0f);
    ql::fake_quantize_buffer(x.data(), y.data(), {1, kCols}, spec);  // the i-quants' tables, built once
    for (auto _ : state) {
        ql::fake_quantize_buffer(x.data(), y.data(), {kRows, kCols}, spec);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
    state.SetLabel(format + (requires_importance(t) ? " imatrix" : ""));
}

void Memcpy8MiB(benchmark::State& state) {
    const auto& x = input();
    std::vector<float> y(x.size(), 1.0f);
    for (auto _ : state) {
        ql::kernels::parallel_ranges(kRows * kCols, int64_t{1} << 18, 1024, [&](int64_t b, int64_t e) {
            std::memcpy(y.data() + b, x.data() + b, static_cast<size_t>(e - b) * sizeof(float));
        });
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 8);
}

const int kRegistered = [] {
    for (int i = 0; i < static_cast<int>(std::size(kTypes)); ++i)
        for (int w = 0; w < 2; ++w) {
            if (w && without_importance_path(kTypes[i])) continue;
            if (!w && requires_importance(kTypes[i])) continue;
            const std::string name = std::string(ql::ggml_type_name(kTypes[i])) + (w ? "/imatrix" : "");
            benchmark::RegisterBenchmark(("GgufEncode/" + name).c_str(), GgufEncode)
                ->Args({i, w})
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
            benchmark::RegisterBenchmark(("GgmlEncode/" + name).c_str(), GgmlEncode)
                ->Args({i, w})
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
    benchmark::RegisterBenchmark("Memcpy8MiB", Memcpy8MiB)->Unit(benchmark::kMillisecond)->UseRealTime();
    for (int i = kFirstSearch; i < static_cast<int>(std::size(kTypes)); ++i)
        benchmark::RegisterBenchmark(("GgufFakeQuantSearch/" + ql::gguf_format_name(kTypes[i])).c_str(), GgufFakeQuantSearch)
            ->Arg(i)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    return 0;
}();

}  // namespace
