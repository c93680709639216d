// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/process_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace ql {
namespace {

// "Key:   1234 kB" lines of a /proc file, in bytes; 0 when absent.
uint64_t proc_kib_field(const char* path, const char* key) {
    std::ifstream in(path);
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
            return std::strtoull(line.c_str() + n + 1, nullptr, 10) * 1024;
    return 0;
}

// A cgroup v2 file holding one number ("max" and missing files give 0).
uint64_t cgroup_value(const char* name) {
    std::ifstream in(std::string("/sys/fs/cgroup/") + name);
    std::string v;
    if (!(in >> v) || v == "max") return 0;
    return std::strtoull(v.c_str(), nullptr, 10);
}

}  // namespace

ProcessMemory process_memory() {
    ProcessMemory m;
    m.rss_bytes = proc_kib_field("/proc/self/status", "VmRSS");
    m.peak_rss_bytes = proc_kib_field("/proc/self/status", "VmHWM");
    return m;
}

void return_free_heap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

bool reset_peak_rss() {
    FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

uint64_t available_memory_bytes() {
    if (const char* limit = std::getenv("QUANTLAB_MEMORY_LIMIT_BYTES"); limit && *limit) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(limit, &end, 10);
        if (end && *end == '\0' && v > 0) return v;
    }
    uint64_t available = proc_kib_field("/proc/meminfo", "MemAvailable");
    if (const uint64_t max = cgroup_value("memory.max"); max > 0) {
        const uint64_t used = cgroup_value("memory.current");
        const uint64_t left = max > used ? max - used : 0;
        if (available == 0 || left < available) available = left;
    }
    return available;
}

}  // namespace ql
