// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/allocation_limit.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "engine/core/errors.h"

namespace ql {

uint64_t physical_memory_bytes() {
    if (const char* limit = std::getenv("QUANTLAB_MEMORY_LIMIT_BYTES"); limit && *limit) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(limit, &end, 10);
        if (end && *end == '\0' && v > 0) return v;
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<uint64_t>::max();  // unknown: refuse nothing
    return checked_product({static_cast<uint64_t>(pages), static_cast<uint64_t>(page)})
        .value_or(std::numeric_limits<uint64_t>::max());
}

std::optional<uint64_t> checked_product(std::initializer_list<uint64_t> factors) {
    uint64_t p = 1;
    bool overflow = false;
    for (uint64_t f : factors) {
        if (f == 0) return 0;  // zero wins over an overflow elsewhere: nothing is allocated
        overflow = overflow || __builtin_mul_overflow(p, f, &p);
    }
    if (overflow) return std::nullopt;
    return p;
}

std::optional<uint64_t> checked_sum(std::optional<uint64_t> a, std::optional<uint64_t> b) {
    uint64_t s = 0;
    if (!a || !b || __builtin_add_overflow(*a, *b, &s)) return std::nullopt;
    return s;
}

std::string bytes_text(std::optional<uint64_t> bytes) {
    if (!bytes) return "more than " + std::to_string(std::numeric_limits<uint64_t>::max()) + " bytes";
    const double b = static_cast<double>(*bytes);
    char head[32];
    // Decimal units, as disk and memory sizes are usually quoted.
    if (b >= 1e12) std::snprintf(head, sizeof head, "%.1f TB", b / 1e12);
    else if (b >= 1e9) std::snprintf(head, sizeof head, "%.1f GB", b / 1e9);
    else if (b >= 1e6) std::snprintf(head, sizeof head, "%.1f MB", b / 1e6);
    else return std::to_string(*bytes) + " bytes";
    return std::string(head) + " (" + std::to_string(*bytes) + " bytes)";
}

void require_allocatable(std::optional<uint64_t> bytes, const std::string& where, const std::string& what) {
    const uint64_t limit = physical_memory_bytes();
    if (bytes && *bytes <= limit) return;
    throw UserError(where + ": " + what + " would need " + bytes_text(bytes) + ", more than this machine's memory (" +
                    bytes_text(limit) + ")");
}

}  // namespace ql
