// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF export speed (docs/BENCHMARKS.md), every number against a baseline in the same run:
//   GgufExportQ4_0         write_gguf_tensors of a Llama-3.2-1B-shaped stack (hidden 2048, 32
//                          heads / 8 kv heads of 64, SwiGLU 8192) to Q4_0 with fsync; bytes
//                          processed = float32 input. Only QUANTLAB_BENCH_GGUF_LAYERS blocks
//                          (default 4 of the 16, ~0.97 GB of float32; the whole 1.24 B model
//                          needs ~5 GB of input and the machine has 24 GB shared with builds) and
//                          no embedding: the per-tensor work is the same for every block.
//   GgufFwriteSameBytes    baseline: fwrite of as many bytes as that GGUF file, fsync, close
//   GgufQuantize/<type>    encode_gguf_tensor of 4096 x 4096 float32 (64 MiB) -> Q4_0, Q8_0,
//                          MXFP4 on the OpenMP pool (2 threads here); bytes = float32 input
//   GgmlQuantize/<type>    llama.cpp's own ggml_quantize_chunk on the same input, rows split over
//                          2 std::threads as llama-quantize splits them; the library is dlopen'ed
//                          from $QUANTLAB_GGML_LIB (libggml-base.so of llama-cpp-python), skipped
//                          with a message when unset
// scripts/bench-report prints the ratios.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/engine_runtime.h"
#include "engine/export/gguf_encode.h"
#include "engine/export/gguf_tensor_writer.h"

namespace {

namespace fs = std::filesystem;

std::string bench_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/quantlab-gguf-bench-XXXXXX";
    if (!::mkdtemp(pattern.data())) std::abort();
    return pattern;
}

struct Stack {
    std::vector<ql::GgufTensorPlan> plans;
    std::vector<at::Tensor> keep;
    int64_t input_bytes = 0;
    std::string dir = bench_dir();
    Stack() {
        ql::initialise_engine_runtime();
        const char* env = std::getenv("QUANTLAB_BENCH_GGUF_LAYERS");
        const int layers = env ? std::atoi(env) : 4;
        at::manual_seed(0);
        auto add = [&](const std::string& name, int64_t rows, int64_t cols, ql::GgmlType t) {
            at::Tensor x = rows > 1 ? at::randn({rows, cols}) * 0.02 : at::ones({cols});
            keep.push_back(x);
            plans.push_back({name, rows > 1 ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols}, t, [x] { return x; }, {}});
            input_bytes += x.numel() * 4;
        };
        for (int l = 0; l < layers; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            add(b + "attn_norm.weight", 1, 2048, ql::GgmlType::F32);
            add(b + "attn_q.weight", 2048, 2048, ql::GgmlType::Q4_0);
            add(b + "attn_k.weight", 512, 2048, ql::GgmlType::Q4_0);
            add(b + "attn_v.weight", 512, 2048, ql::GgmlType::Q4_0);
            add(b + "attn_output.weight", 2048, 2048, ql::GgmlType::Q4_0);
            add(b + "ffn_norm.weight", 1, 2048, ql::GgmlType::F32);
            add(b + "ffn_gate.weight", 8192, 2048, ql::GgmlType::Q4_0);
            add(b + "ffn_up.weight", 8192, 2048, ql::GgmlType::Q4_0);
            add(b + "ffn_down.weight", 2048, 8192, ql::GgmlType::Q4_0);
        }
    }
    ~Stack() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

Stack& stack() {
    static Stack s;
    return s;
}

int64_t g_gguf_bytes = 0;

void GgufExportQ4_0(benchmark::State& state) {
    Stack& s = stack();
    ql::NullJobSink sink;
    ql::CancellationToken cancel;
    const std::string path = s.dir + "/model.gguf";
    for (auto _ : state) g_gguf_bytes = static_cast<int64_t>(ql::write_gguf_tensors(path, {}, s.plans, true, sink, cancel));
    state.SetBytesProcessed(state.iterations() * s.input_bytes);
    state.counters["file_bytes"] = static_cast<double>(g_gguf_bytes);
}
BENCHMARK(GgufExportQ4_0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void GgufFwriteSameBytes(benchmark::State& state) {
    Stack& s = stack();
    if (g_gguf_bytes == 0) {
        ql::NullJobSink sink;
        ql::CancellationToken cancel;
        g_gguf_bytes = static_cast<int64_t>(ql::write_gguf_tensors(s.dir + "/model.gguf", {}, s.plans, true, sink, cancel));
    }
    std::vector<char> bytes(static_cast<size_t>(g_gguf_bytes), 1);
    const std::string path = s.dir + "/plain.bin";
    for (auto _ : state) {
        FILE* f = std::fopen(path.c_str(), "wb");
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fflush(f);
        ::fsync(fileno(f));
        std::fclose(f);
    }
    // The export's input bytes, so that the two rates compare as times for the same model.
    state.SetBytesProcessed(state.iterations() * s.input_bytes);
    state.counters["file_bytes"] = static_cast<double>(g_gguf_bytes);
}
BENCHMARK(GgufFwriteSameBytes)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

constexpr int64_t kRows = 4096, kCols = 4096;

const std::vector<float>& quantize_input() {
    static const std::vector<float> x = [] {
        ql::initialise_engine_runtime();
        at::manual_seed(1);
        const at::Tensor t = at::randn({kRows, kCols}) * 0.02;
        return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    }();
    return x;
}

const ql::GgmlType kTypes[] = {ql::GgmlType::Q4_0, ql::GgmlType::Q8_0, ql::GgmlType::MXFP4};

void GgufQuantize(benchmark::State& state) {
    const ql::GgmlType t = kTypes[state.range(0)];
    const auto& x = quantize_input();
    std::vector<uint8_t> out(*ql::ggml_tensor_bytes(t, {kCols, kRows}));
    for (auto _ : state) {
        ql::encode_gguf_tensor(x.data(), kRows, kCols, t, out.data());
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
    state.SetLabel(ql::ggml_type_name(t));
}
BENCHMARK(GgufQuantize)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// ggml.h: size_t ggml_quantize_chunk(enum ggml_type, const float * src, void * dst, int64_t start,
// int64_t nrows, int64_t n_per_row, const float * imatrix); void ggml_quantize_init(enum ggml_type).
using QuantizeChunk = size_t (*)(int, const float*, void*, int64_t, int64_t, int64_t, const float*);
using QuantizeInit = void (*)(int);

void GgmlQuantize(benchmark::State& state) {
    const char* lib = std::getenv("QUANTLAB_GGML_LIB");
    if (!lib || !*lib) {
        state.SkipWithError("QUANTLAB_GGML_LIB not set (path of llama.cpp's libggml-base.so)");
        return;
    }
    static void* handle = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        state.SkipWithError((std::string("dlopen failed: ") + ::dlerror()).c_str());
        return;
    }
    const auto chunk = reinterpret_cast<QuantizeChunk>(::dlsym(handle, "ggml_quantize_chunk"));
    const auto init = reinterpret_cast<QuantizeInit>(::dlsym(handle, "ggml_quantize_init"));
    if (!chunk) {
        state.SkipWithError("ggml_quantize_chunk not found");
        return;
    }
    const ql::GgmlType t = kTypes[state.range(0)];
    if (init) init(static_cast<int>(t));
    const auto& x = quantize_input();
    std::vector<uint8_t> out(*ql::ggml_tensor_bytes(t, {kCols, kRows}));
    for (auto _ : state) {
        // Two threads, each a contiguous half of the rows (llama-quantize's llama_tensor_quantize_impl).
        auto half = [&](int64_t r0, int64_t r1) {
            chunk(static_cast<int>(t), x.data(), out.data(), r0 * kCols, r1 - r0, kCols, nullptr);  // offsets dst itself
        };
        std::thread a(half, 0, kRows / 2);
        half(kRows / 2, kRows);
        a.join();
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kCols * 4);
    state.SetLabel(ql::ggml_type_name(t));
}
BENCHMARK(GgmlQuantize)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
