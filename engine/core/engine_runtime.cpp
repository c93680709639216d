// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/engine_runtime.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <link.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "torch/version.h"

namespace ql {
namespace {

// Which shared object provides the BLAS sgemm LibTorch will call.
std::string blas_library() {
    void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
    if (!sym) return "unknown";
    Dl_info info{};
    if (dladdr(sym, &info) == 0 || !info.dli_fname) return "unknown";
    char resolved[4096];
    if (realpath(info.dli_fname, resolved)) return resolved;
    return info.dli_fname;
}

// OpenBLAS names its version and the kernel it picked for this CPU (other BLAS libraries: "").
std::string blas_config() {
    using GetConfig = char* (*)();
    auto* get = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
    const char* text = get ? get() : nullptr;
    return text ? std::string(text) : std::string();
}

// openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP.
std::string blas_threads() {
    using GetParallel = int (*)();
    auto* get = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
    if (!get) return "";
    switch (get()) {
        case 0: return "sequential";
        case 1: return "pthreads";
        case 2: return "openmp";
        default: return "";
    }
}

bool user_set_malloc_tunables() {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    return (tunables && std::strstr(tunables, "glibc.malloc.")) || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
           std::getenv("MALLOC_TRIM_THRESHOLD_");
}

// See initialise_engine_runtime(): large activations reused from the heap, not re-faulted.
bool tune_malloc_for_activations() {
    if (user_set_malloc_tunables()) return false;
    constexpr int kHeapBlocksUpTo = 128 << 20;   // bytes; larger blocks are still mmap()ed
    constexpr int kFreedHeapKept = 256 << 20;    // bytes of free heap top kept before trimming
    return mallopt(M_MMAP_THRESHOLD, kHeapBlocksUpTo) == 1 && mallopt(M_TRIM_THRESHOLD, kFreedHeapKept) == 1;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon == std::string::npos) break;
            const size_t start = line.find_first_not_of(" \t", colon + 1);
            return start == std::string::npos ? std::string() : line.substr(start);
        }
    return "";
}

}  // namespace

std::string quantlab_version() { return QUANTLAB_VERSION; }

std::string quantlab_source_commit() {
    const std::string command =
        "git -C '" QUANTLAB_SOURCE_DIR "' describe --always --dirty --abbrev=40 --exclude='*' 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return "unknown";
    char buffer[128] = {};
    const bool got = std::fgets(buffer, sizeof buffer, pipe) != nullptr;
    const int status = pclose(pipe);
    std::string commit = got ? buffer : "";
    while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r')) commit.pop_back();
    return status == 0 && !commit.empty() ? commit : "unknown";
}

RuntimeInfo initialise_engine_runtime() {
    static const RuntimeInfo info = [] {
        RuntimeInfo r;
        const unsigned hw = std::thread::hardware_concurrency();
        // Debian's LibTorch starts with one intra-op thread (PERF.md lesson 2).
        at::set_num_threads(static_cast<int>(hw ? hw : 1));
        r.threads = at::get_num_threads();
        r.blas = blas_library();
        r.blas_config = blas_config();
        r.blas_threads = blas_threads();
        r.malloc_tuned = tune_malloc_for_activations();
        r.cpu_model = cpu_model();
        r.hardware_threads = static_cast<int>(hw);
        // Debian's reference BLAS lives in .../blas/libblas.so.3; OpenBLAS in .../openblas-*/.
        r.reference_blas = r.blas.find("/blas/libblas") != std::string::npos;
        if (r.reference_blas)
            std::fprintf(stderr,
                         "quantlab: warning: the reference BLAS (%s) is active; matrix products run ~40x slower. "
                         "Install libopenblas0-pthread.\n",
                         r.blas.c_str());
        r.torch_version = TORCH_VERSION;
#if defined(QUANTLAB_HAVE_CUDA)
        r.cuda_kernels = true;
#endif
        r.quantlab_version = QUANTLAB_VERSION;
        return r;
    }();
    return info;
}

void prepare_engine_worker_thread() { at::set_num_threads(initialise_engine_runtime().threads); }

}  // namespace ql
