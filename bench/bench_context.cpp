// SPDX-License-Identifier: GPL-3.0-or-later
// What every quantlab-bench report starts with (Google Benchmark's context, also in the JSON
// output that scripts/bench-report reads): the CPU, the kernels' CPU clone, the intra-op threads
// and the BLAS LibTorch calls. Set QUANTLAB_CPU_CLONE=x86-64|x86-64-v3|x86-64-v4 to time another
// clone than the best one this CPU runs.
#include <benchmark/benchmark.h>

#include <string>

#include "engine/core/engine_runtime.h"
#include "kernels/cpu_dispatch.h"

namespace {

const int kContext = [] {
    const ql::RuntimeInfo runtime = ql::initialise_engine_runtime();
    benchmark::AddCustomContext("quantlab_cpu", ql::kernels::cpu_model_name());
    benchmark::AddCustomContext("quantlab_kernel_clone", ql::kernels::cpu_clone_name(ql::kernels::active_cpu_clone()));
    std::string supported;
    for (ql::kernels::CpuClone c : ql::kernels::cpu_clones())
        if (ql::kernels::cpu_clone_supported(c)) supported += (supported.empty() ? "" : " ") + std::string(ql::kernels::cpu_clone_name(c));
    benchmark::AddCustomContext("quantlab_supported_clones", supported);
    benchmark::AddCustomContext("quantlab_threads", std::to_string(runtime.threads));
    benchmark::AddCustomContext("quantlab_blas", runtime.blas);
    benchmark::AddCustomContext("quantlab_torch", runtime.torch_version);
    return 0;
}();

}  // namespace
