// SPDX-License-Identifier: GPL-3.0-or-later
// What initialise_engine_runtime() sets up for every QuantLab process: the BLAS LibTorch calls
// and the allocator's treatment of large activations (engine/core/engine_runtime.h).
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "engine/core/engine_runtime.h"

namespace ql {
namespace {

// glibc's chunk header: the size word before the user pointer; bit 1 marks a chunk of its own
// mmap() (malloc/malloc.c, IS_MMAPPED).
bool came_from_its_own_mapping(const void* p) { return (static_cast<const size_t*>(p)[-1] & 0x2) != 0; }

TEST(EngineRuntime, LibTorchsOpenBlasIsTheOpenMpBuildThatSharesItsThreadPool) {
    const RuntimeInfo r = initialise_engine_runtime();
    EXPECT_FALSE(r.reference_blas) << r.blas;
    EXPECT_GE(r.threads, 1);
    // Where LibTorch calls the system's OpenBLAS (Debian's LibTorch; PyPI's carries its own BLAS)
    // and Debian's OpenMP build of it is installed (scripts/setup-deps), the executables load
    // that build through their RPATH (CMakeLists.txt), whatever the alternatives point at.
    const bool system_openblas = r.blas.find("openblas") != std::string::npos;
    const bool openmp_build_installed = std::filesystem::exists("/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3");
    if (system_openblas && openmp_build_installed) {
        EXPECT_NE(r.blas.find("/openblas-openmp/"), std::string::npos) << r.blas;
        EXPECT_EQ(r.blas_threads, "openmp") << r.blas_config;
        EXPECT_NE(r.blas_config.find("USE_OPENMP"), std::string::npos) << r.blas_config;
    }
    if (system_openblas) EXPECT_FALSE(r.blas_threads.empty()) << r.blas;
}

TEST(EngineRuntime, ActivationSizedBlocksAreReusedFromTheHeapAndHugeOnesStillMapped) {
    const RuntimeInfo r = initialise_engine_runtime();
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const bool user_tuned = (tunables && std::strstr(tunables, "glibc.malloc.")) || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
                            std::getenv("MALLOC_TRIM_THRESHOLD_");
    ASSERT_EQ(r.malloc_tuned, !user_tuned) << "a user's malloc tunables are left alone, otherwise they are set";
    if (user_tuned) return;
    // 100 MiB: the real SmolLM2's logits for 512 tokens (512 x 49152 float32 = 96 MiB). glibc's
    // default mmap()s every block over 32 MiB afresh, so each forward faulted them in again.
    void* logits = std::malloc(100u << 20);
    ASSERT_NE(logits, nullptr);
    EXPECT_FALSE(came_from_its_own_mapping(logits));
    std::free(logits);
    // Beyond 128 MiB a block still gets its own mapping and goes back to the system when freed.
    void* huge = std::malloc(200u << 20);
    ASSERT_NE(huge, nullptr);
    EXPECT_TRUE(came_from_its_own_mapping(huge));
    std::free(huge);
}

}  // namespace
}  // namespace ql
