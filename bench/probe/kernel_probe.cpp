// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-kernel-probe: runs one fake-quantization configuration (bench/fake_quant_formats.h)
// through the engine's fake_quantize_buffer on a [rows, 4096] float32 tensor of N(0, 1) values,
// once inside probe_kernel_call(), so that callgrind can count the instructions of exactly that
// call (scripts/kernel-instructions):
//   quantlab-kernel-probe FORMAT [CLONE] [ROWS]      CLONE: x86-64, x86-64-v3, x86-64-v4
//   quantlab-kernel-probe --list                      the configuration names
// Wall-clock speed is quantlab-bench's job; instruction counts per element are what this is for:
// they are repeatable on a shared, noisy machine.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/fake_quant_formats.h"
#include "engine/formats/format_codec.h"
#include "kernels/cpu_dispatch.h"

namespace {

// Not inlined, so that callgrind's --toggle-collect can name it.
__attribute__((noinline)) void probe_kernel_call(const std::vector<float>& x, std::vector<float>& y,
                                                 const std::vector<int64_t>& shape, const ql::QuantSpec& spec) {
    ql::fake_quantize_buffer(x.data(), y.data(), shape, spec);
}

int usage() {
    std::fprintf(stderr, "usage: quantlab-kernel-probe FORMAT [x86-64|x86-64-v3|x86-64-v4] [ROWS]\n");
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string name = argv[1];
    const auto configs = ql::bench::fake_quant_configs();
    if (name == "--list") {
        for (const auto& c : configs) std::printf("%s%s\n", c.name.c_str(), c.gguf ? " gguf" : "");
        return 0;
    }
    const ql::bench::FakeQuantConfig* config = nullptr;
    for (const auto& c : configs)
        if (c.name == name) config = &c;
    if (!config) return usage();
    if (argc > 2 && argv[2][0] != '\0') {
        bool found = false;
        for (ql::kernels::CpuClone c : ql::kernels::cpu_clones())
            if (argv[2] == std::string(ql::kernels::cpu_clone_name(c))) {
                found = true;
                if (!ql::kernels::set_cpu_clone(c)) {
                    std::fprintf(stderr, "this CPU cannot run the %s clone\n", argv[2]);
                    return 1;
                }
            }
        if (!found) return usage();
    }
    const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 64, cols = 4096;
    if (rows <= 0) return usage();
    const std::vector<int64_t> shape = {rows, cols};
    std::vector<float> x(static_cast<size_t>(rows * cols)), y(x.size());
    std::mt19937 rng(0);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    try {
        const ql::QuantSpec spec = ql::resolve_spec(config->options, shape);
        probe_kernel_call(x, y, shape, spec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        return 2;
    }
    std::printf("%s %s %lld elements\n", name.c_str(), ql::kernels::cpu_clone_name(ql::kernels::active_cpu_clone()),
                static_cast<long long>(rows * cols));
    return 0;
}
