// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-kernel-ratio: the fused fake-quant kernels against memcpy in the same run, without
// LibTorch or the engine (it links only quantlab_kernels, so it builds in seconds where
// quantlab-bench needs the whole engine):
//   quantlab-kernel-ratio [ROUNDS]        (default 7; OMP_NUM_THREADS sets the threads)
// One [16384, 4096] float32 tensor of N(0, 1) values (256 MiB; bytes = read + written, as in
// bench/format_bench.cpp). Each round times Memcpy (the same threads, one contiguous range each)
// and then every supported CPU clone of the kernel once, so each ratio compares two timings taken
// seconds apart; the median over rounds is printed, with the spread. The settings are the
// formats' defaults as the CLI resolves them (bench/fake_quant_formats.h); per-tensor formats
// include their finite-amax pass, as the engine runs them. quantlab-bench's FakeQuant/<format>
// is the same work through the engine (resolve_spec, fake_quantize_into).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/channel_reduce.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/half_rounding.h"
#include "kernels/integer_quant.h"
#include "kernels/mx.h"
#include "kernels/nf4.h"
#include "kernels/nvfp4.h"
#include "kernels/parallel.h"
#include "kernels/scaled_fp8.h"

namespace {

using namespace ql::kernels;

struct Kernel {
    const char* name;
    void (*run)(const float* x, float* y, int64_t rows, int64_t cols);
};

template <MxElement E>
void mx(const float* x, float* y, int64_t rows, int64_t cols) {
    mx_fake_quant(x, y, RowBlocks{rows, cols, kMxBlock}, E, MxScaleRule::Floor);
}

template <Fp8Kind K>
void fp8(const float* x, float* y, int64_t rows, int64_t cols) {
    const float s = fp8_scale_for_amax(finite_absmax(x, rows * cols), K);
    fp8_fake_quant(x, y, ChannelLayout{1, 1, rows * cols}, &s, K);
}

template <int BITS, bool ASYM>
void integer(const float* x, float* y, int64_t rows, int64_t cols) {
    int_fake_quant_groups(x, y, RowBlocks{rows, cols, 128}, IntFormat{BITS, ASYM});
}

const Kernel kKernels[] = {
    {"nvfp4",
     [](const float* x, float* y, int64_t rows, int64_t cols) {
         nvfp4_fake_quant(x, y, RowBlocks{rows, cols, kNvfp4Block}, nvfp4_global_scale(finite_absmax(x, rows * cols)));
     }},
    {"mxfp4", mx<MxElement::E2M1>},
    {"mxfp6_e2m3", mx<MxElement::E2M3>},
    {"mxfp6_e3m2", mx<MxElement::E3M2>},
    {"mxfp8_e4m3", mx<MxElement::E4M3>},
    {"mxfp8_e5m2", mx<MxElement::E5M2>},
    {"mxint8", mx<MxElement::Int8>},
    {"fp8_e4m3", fp8<Fp8Kind::E4M3>},
    {"fp8_e5m2", fp8<Fp8Kind::E5M2>},
    {"int8", integer<8, false>},
    {"int4", integer<4, false>},
    {"int4_asym", integer<4, true>},
    {"nf4", [](const float* x, float* y, int64_t rows, int64_t cols) { nf4_fake_quant(x, y, rows * cols, kNf4Block); }},
    {"bf16", [](const float* x, float* y, int64_t rows, int64_t cols) { half_round_trip(x, y, rows * cols, HalfKind::BF16); }},
    {"fp16", [](const float* x, float* y, int64_t rows, int64_t cols) { half_round_trip(x, y, rows * cols, HalfKind::FP16); }},
};

template <class F>
double seconds(const F& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
    if (rounds <= 0) {
        std::fprintf(stderr, "usage: quantlab-kernel-ratio [ROUNDS]\n");
        return 1;
    }
    const int64_t rows = 16384, cols = 4096, n = rows * cols;
    std::vector<float> x(static_cast<size_t>(n)), y(x.size(), 1.0f);  // y touched: no page faults timed
    std::mt19937 rng(0);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    const auto copy = [&] {
        parallel_ranges(n, int64_t{1} << 20, 1024, [&](int64_t b, int64_t e) {
            std::memcpy(y.data() + b, x.data() + b, static_cast<size_t>(e - b) * sizeof(float));
        });
    };
    std::vector<CpuClone> clones;
    for (CpuClone c : cpu_clones())
        if (cpu_clone_supported(c)) clones.push_back(c);
    const CpuClone active = active_cpu_clone();
    std::printf("CPU: %s; threads: %d; default clone: %s; %d rounds\n", cpu_model_name().c_str(), worker_threads(),
                cpu_clone_name(active), rounds);
    std::printf("| format |");
    for (CpuClone c : clones) std::printf(" %s GB/s | %s × memcpy (min–max) |", cpu_clone_name(c), cpu_clone_name(c));
    std::printf("\n|---|");
    for (size_t i = 0; i < clones.size(); ++i) std::printf("---|---|");
    std::printf("\n");
    std::vector<double> memcpy_rates;
    for (const Kernel& k : kKernels) {
        std::vector<std::vector<double>> ratio(clones.size()), rate(clones.size());
        for (size_t c = 0; c < clones.size(); ++c) {  // warm-up, one call per clone
            set_cpu_clone(clones[c]);
            k.run(x.data(), y.data(), rows, cols);
        }
        for (int r = 0; r < rounds; ++r) {
            const double tc = seconds(copy);
            memcpy_rates.push_back(8.0 * static_cast<double>(n) / tc / 1e9);
            for (size_t c = 0; c < clones.size(); ++c) {
                set_cpu_clone(clones[c]);
                const double tk = seconds([&] { k.run(x.data(), y.data(), rows, cols); });
                ratio[c].push_back(tc / tk);
                rate[c].push_back(8.0 * static_cast<double>(n) / tk / 1e9);
            }
        }
        std::printf("| %s |", k.name);
        for (size_t c = 0; c < clones.size(); ++c) {
            const auto [lo, hi] = std::minmax_element(ratio[c].begin(), ratio[c].end());
            std::printf(" %.1f | %.2f (%.2f–%.2f) |", median(rate[c]), median(ratio[c]), *lo, *hi);
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    set_cpu_clone(active);
    std::printf("Memcpy: median %.1f GB/s over the run (%.1f–%.1f)\n", median(memcpy_rates),
                *std::min_element(memcpy_rates.begin(), memcpy_rates.end()),
                *std::max_element(memcpy_rates.begin(), memcpy_rates.end()));
    return 0;
}
