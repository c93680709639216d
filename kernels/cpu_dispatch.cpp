// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/cpu_dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if QL_X86_CLONES
#include <cpuid.h>
#endif

namespace ql::kernels {
namespace {

std::atomic<int>& selected_clone() {
    static std::atomic<int> clone{static_cast<int>(default_cpu_clone())};
    return clone;
}

}  // namespace

std::vector<CpuClone> cpu_clones() {
#if QL_X86_CLONES
    return {CpuClone::Baseline, CpuClone::X86_64_V3, CpuClone::X86_64_V4};
#else
    return {CpuClone::Baseline};
#endif
}

const char* cpu_clone_name(CpuClone clone) {
    switch (clone) {
        case CpuClone::X86_64_V4: return "x86-64-v4";
        case CpuClone::X86_64_V3: return "x86-64-v3";
        case CpuClone::Baseline: break;
    }
    return QL_X86_CLONES ? "x86-64" : "portable";
}

bool cpu_clone_supported(CpuClone clone) {
#if QL_X86_CLONES
    // libgcc's checks include the OS's XSAVE support of the vector registers (XCR0), so a
    // hypervisor that hides AVX-512 state makes x86-64-v4 unsupported even if CPUID lists it.
    __builtin_cpu_init();
    switch (clone) {
        case CpuClone::X86_64_V4: return __builtin_cpu_supports("x86-64-v4") != 0;
        case CpuClone::X86_64_V3: return __builtin_cpu_supports("x86-64-v3") != 0;
        case CpuClone::Baseline: return true;
    }
    return false;
#else
    return clone == CpuClone::Baseline;
#endif
}

CpuClone default_cpu_clone() {
    if (const char* wanted = std::getenv("QUANTLAB_CPU_CLONE"))
        for (CpuClone c : cpu_clones())
            if (std::strcmp(wanted, cpu_clone_name(c)) == 0 && cpu_clone_supported(c)) return c;
    CpuClone best = CpuClone::Baseline;
    for (CpuClone c : cpu_clones())
        if (cpu_clone_supported(c)) best = c;
    return best;
}

CpuClone active_cpu_clone() { return static_cast<CpuClone>(selected_clone().load(std::memory_order_relaxed)); }

bool set_cpu_clone(CpuClone clone) {
    if (!cpu_clone_supported(clone)) return false;
    selected_clone().store(static_cast<int>(clone), std::memory_order_relaxed);
    return true;
}

std::string cpu_model_name() {
#if QL_X86_CLONES
    unsigned regs[12] = {};
    unsigned max_leaf = __get_cpuid_max(0x80000000u, nullptr);
    if (max_leaf < 0x80000004u) return "unknown";
    for (unsigned i = 0; i < 3; ++i) __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char text[49] = {};
    std::memcpy(text, regs, 48);
    std::string name(text);
    const size_t first = name.find_first_not_of(' ');
    const size_t last = name.find_last_not_of(' ');
    return first == std::string::npos ? "unknown" : name.substr(first, last - first + 1);
#else
    return "unknown";
#endif
}

}  // namespace ql::kernels
