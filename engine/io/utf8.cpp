// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/utf8.h"

namespace ql {

std::optional<uint64_t> first_invalid_utf8(const char* data, uint64_t size) {
    const auto* s = reinterpret_cast<const unsigned char*>(data);
    uint64_t i = 0;
    while (i < size) {
        const unsigned c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        // Unicode 15, table 3-7 (well-formed byte sequences): the allowed range of the second
        // byte depends on the first; the rest are 80..BF.
        int len;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return i;
        }
        if (size - i < static_cast<uint64_t>(len)) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (int k = 2; k < len; ++k)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += static_cast<uint64_t>(len);
    }
    return std::nullopt;
}

}  // namespace ql
