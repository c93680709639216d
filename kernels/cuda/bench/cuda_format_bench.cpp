// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cuda-bench: throughput of the CUDA format kernels on one large float32 tensor, as GB/s
// (bytes read + bytes written per call) and as a ratio to a device-to-device cudaMemcpy of the
// tensor measured in the same run (the memory-bound ceiling: a fake quantization moves the same
// bytes as that copy).
//   quantlab-cuda-bench [--elements N] [--repeats R] [--json PATH]
// Default N = 64 Mi elements. Each figure is the best of R timings of 10 back-to-back calls
// (cudaEvent), after a warm-up call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_kernels.h"

namespace {

namespace cu = ql::kernels::cuda;
using ql::kernels::ChannelLayout;
using ql::kernels::RowBlocks;

void cuda_ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Milliseconds per call: best over `repeats` batches of 10 calls.
double time_ms(const std::function<void()>& call, int repeats) {
    cudaEvent_t start, stop;
    cuda_ok(cudaEventCreate(&start), "cudaEventCreate");
    cuda_ok(cudaEventCreate(&stop), "cudaEventCreate");
    call();  // warm-up (also uploads tables, grows memory pools)
    cuda_ok(cudaDeviceSynchronize(), "warm-up");
    constexpr int kCalls = 10;
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        cuda_ok(cudaEventRecord(start), "cudaEventRecord");
        for (int i = 0; i < kCalls; ++i) call();
        cuda_ok(cudaEventRecord(stop), "cudaEventRecord");
        cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0.0f;
        cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        best = std::min(best, static_cast<double>(ms) / kCalls);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return best;
}

struct Result {
    std::string format, op;
    double bytes, ms;
};

// Weights-like data: normal values with a per-row magnitude (rows of 4096), deterministic.
std::vector<float> make_input(int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    uint64_t s = 0x9E3779B97F4A7C15ull;
    auto uniform = [&] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return (static_cast<double>(s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    };
    float row_scale = 1.0f;
    for (int64_t i = 0; i < n; i += 2) {
        if (i % 4096 == 0) row_scale = std::ldexp(1.0f, static_cast<int>(uniform() * 12.0) - 8);
        const double r = std::sqrt(-2.0 * std::log(uniform())), t = 6.283185307179586 * uniform();
        x[static_cast<size_t>(i)] = static_cast<float>(r * std::cos(t)) * row_scale;
        if (i + 1 < n) x[static_cast<size_t>(i + 1)] = static_cast<float>(r * std::sin(t)) * row_scale;
    }
    return x;
}

int run(int64_t n, int repeats, const char* json_path) {
    if (!cu::cuda_device_available()) {
        std::fprintf(stderr, "quantlab-cuda-bench: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop{};
    cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const int64_t cols = 4096, rows = n / cols;
    n = rows * cols;
    const double fbytes = 4.0 * static_cast<double>(n), cbytes = static_cast<double>(n);

    const std::vector<float> host = make_input(n);
    cu::DeviceArray<float> x(host), y(n);
    cu::DeviceArray<uint8_t> codes(n), scales(n / 16 + 1);
    cu::DeviceArray<float> stats(n / 64 + 1);
    cu::DeviceArray<ql::kernels::IntParams> params(n / 128 + 1);

    std::vector<Result> results;
    const double copy_ms = time_ms([&] { cuda_ok(cudaMemcpyAsync(y.data(), x.data(), static_cast<size_t>(fbytes),
                                                                 cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); },
                                   repeats);
    results.push_back({"copy", "cudaMemcpy D2D", 2.0 * fbytes, copy_ms});

    const RowBlocks L16{rows, cols, 16}, L32{rows, cols, 32}, L128{rows, cols, 128};
    const ChannelLayout tensor{1, 1, n};
    // Per-tensor scales are computed once, outside the timed calls; the amax pass is timed apart.
    const float g = ql::kernels::nvfp4_global_scale(cu::finite_absmax(x.data(), n));
    results.push_back({"amax", "finite_absmax", fbytes, time_ms([&] { cu::finite_absmax(x.data(), n); }, repeats)});
    cu::DeviceArray<float> fp8_scale_array(1);
    cu::channel_finite_absmax(x.data(), tensor, fp8_scale_array.data());
    cu::fp8_scales_for_amax(fp8_scale_array.data(), 1, ql::kernels::Fp8Kind::E4M3, fp8_scale_array.data());
    const float* fp8_scale = fp8_scale_array.data();
    const ql::kernels::IntFormat int4{4, false};
    const auto E2M1 = ql::kernels::MxElement::E2M1;
    const auto Floor = ql::kernels::MxScaleRule::Floor;
    const auto E4M3 = ql::kernels::Fp8Kind::E4M3;

    auto add = [&](const char* format, const char* op, double bytes, const std::function<void()>& call) {
        results.push_back({format, op, bytes, time_ms(call, repeats)});
    };
    add("nvfp4", "fake_quant", 2 * fbytes, [&] { cu::nvfp4_fake_quant(x.data(), y.data(), L16, g); });
    add("nvfp4", "encode", fbytes + cbytes + cbytes / 16,
        [&] { cu::nvfp4_encode(x.data(), L16, g, codes.data(), scales.data()); });
    add("nvfp4", "decode", fbytes + cbytes + cbytes / 16,
        [&] { cu::nvfp4_decode(codes.data(), scales.data(), L16, g, y.data()); });
    add("mxfp4", "fake_quant", 2 * fbytes, [&] { cu::mx_fake_quant(x.data(), y.data(), L32, E2M1, Floor); });
    add("mxfp4", "encode", fbytes + cbytes + cbytes / 32,
        [&] { cu::mx_encode(x.data(), L32, E2M1, Floor, codes.data(), scales.data()); });
    add("mxfp4", "decode", fbytes + cbytes + cbytes / 32,
        [&] { cu::mx_decode(codes.data(), scales.data(), L32, E2M1, y.data()); });
    add("fp8_e4m3", "fake_quant", 2 * fbytes, [&] { cu::fp8_fake_quant(x.data(), y.data(), tensor, fp8_scale, E4M3); });
    add("fp8_e4m3", "encode", fbytes + cbytes,
        [&] { cu::fp8_encode(x.data(), tensor, fp8_scale, E4M3, codes.data()); });
    add("fp8_e4m3", "decode", fbytes + cbytes,
        [&] { cu::fp8_decode(codes.data(), tensor, fp8_scale, E4M3, y.data()); });
    add("int4_g128", "fake_quant", 2 * fbytes, [&] { cu::int_fake_quant_groups(x.data(), y.data(), L128, int4); });
    add("int4_g128", "encode", fbytes + cbytes + cbytes / 16,
        [&] { cu::int_encode_groups(x.data(), L128, int4, codes.data(), params.data()); });
    add("int4_g128", "decode", fbytes + cbytes + cbytes / 16,
        [&] { cu::int_decode_groups(codes.data(), params.data(), L128, int4, y.data()); });
    add("nf4", "fake_quant", 2 * fbytes, [&] { cu::nf4_fake_quant(x.data(), y.data(), n, 64); });
    add("nf4", "encode", fbytes + cbytes + cbytes / 16,
        [&] { cu::nf4_encode(x.data(), n, 64, codes.data(), stats.data()); });
    add("nf4", "decode", fbytes + cbytes + cbytes / 16,
        [&] { cu::nf4_decode(codes.data(), stats.data(), n, 64, y.data()); });
    // The Walsh-Hadamard rotation (kernels/hadamard.h) in the blocks rotations use.
    for (int64_t block : {int64_t{16}, int64_t{128}, int64_t{512}, int64_t{4096}})
        if (cols % block == 0)
            add(("hadamard_" + std::to_string(block)).c_str(), "rows", 2 * fbytes,
                [&, block] { cu::hadamard_rows(x.data(), y.data(), ql::kernels::HadamardLayout{rows, cols, block}); });
    cuda_ok(cudaDeviceSynchronize(), "benchmark");

    const double copy_gbps = 2.0 * fbytes / (copy_ms * 1e6);
    std::printf("device: %s, %lld float32 elements (%.0f MiB), copy baseline %.1f GB/s\n", prop.name,
                static_cast<long long>(n), fbytes / 1048576.0, copy_gbps);
    for (const Result& r : results) {
        const double gbps = r.bytes / (r.ms * 1e6);
        // The target for the streaming kernels is 0.7x of the copy; flag what falls short.
        std::printf("%-10s %-16s %8.3f ms %9.1f GB/s %6.2fx copy%s\n", r.format.c_str(), r.op.c_str(), r.ms, gbps,
                    gbps / copy_gbps, gbps / copy_gbps < 0.7 ? "  (below 0.7x)" : "");
    }
    if (json_path) {
        std::ofstream out(json_path);
        if (!out) throw std::runtime_error(std::string("cannot write ") + json_path);
        out << "{\n  \"device\": \"" << prop.name << "\",\n  \"elements\": " << n << ",\n  \"copy_gbps\": " << copy_gbps
            << ",\n  \"results\": [\n";
        for (size_t i = 0; i < results.size(); ++i) {
            const Result& r = results[i];
            const double gbps = r.bytes / (r.ms * 1e6);
            out << "    {\"format\": \"" << r.format << "\", \"op\": \"" << r.op << "\", \"ms\": " << r.ms
                << ", \"bytes\": " << r.bytes << ", \"gbps\": " << gbps << ", \"ratio_to_copy\": " << gbps / copy_gbps
                << "}" << (i + 1 < results.size() ? "," : "") << "\n";
        }
        out << "  ]\n}\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int64_t n = int64_t{64} << 20;
    int repeats = 5;
    const char* json = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--elements" && i + 1 < argc) {
            n = std::atoll(argv[++i]);
        } else if (a == "--repeats" && i + 1 < argc) {
            repeats = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--json" && i + 1 < argc) {
            json = argv[++i];
        } else {
            std::fprintf(stderr, "usage: %s [--elements N] [--repeats R] [--json PATH]\n", argv[0]);
            return 64;
        }
    }
    if (n < 4096) {
        std::fprintf(stderr, "--elements must be at least 4096\n");
        return 64;
    }
    try {
        return run(n, repeats, json);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quantlab-cuda-bench: %s\n", e.what());
        return 1;
    }
}
