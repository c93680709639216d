// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/packing.h"

#include <cstring>

#include "kernels/parallel.h"

namespace ql::kernels {

void pack_nibbles(const uint8_t* codes, int64_t rows, int64_t cols, NibbleOrder order, uint8_t* out) {
    const int64_t pc = (cols + 1) / 2;
    const int first_shift = order == NibbleOrder::LowFirst ? 0 : 4;
    const int second_shift = 4 - first_shift;
    parallel_ranges(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1)), 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* c = codes + r * cols;
            uint8_t* o = out + r * pc;
            for (int64_t k = 0; k < cols / 2; ++k)
                o[k] = static_cast<uint8_t>(((c[2 * k] & 0xF) << first_shift) | ((c[2 * k + 1] & 0xF) << second_shift));
            if (cols % 2) o[pc - 1] = static_cast<uint8_t>((c[cols - 1] & 0xF) << first_shift);
        }
    });
}

void unpack_nibbles(const uint8_t* packed, int64_t rows, int64_t cols, NibbleOrder order, uint8_t* codes) {
    const int64_t pc = (cols + 1) / 2;
    const int first_shift = order == NibbleOrder::LowFirst ? 0 : 4;
    const int second_shift = 4 - first_shift;
    parallel_ranges(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1)), 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* p = packed + r * pc;
            uint8_t* c = codes + r * cols;
            for (int64_t i = 0; i < cols; ++i)
                c[i] = static_cast<uint8_t>((p[i / 2] >> (i % 2 ? second_shift : first_shift)) & 0xF);
        }
    });
}

void pack_fp6(const uint8_t* codes, int64_t n, uint8_t* out) {
    for (int64_t g = 0; g < n / 4; ++g) {
        const uint8_t a = codes[4 * g] & 0x3F, b = codes[4 * g + 1] & 0x3F;
        const uint8_t c = codes[4 * g + 2] & 0x3F, d = codes[4 * g + 3] & 0x3F;
        out[3 * g] = static_cast<uint8_t>((a << 2) | (b >> 4));
        out[3 * g + 1] = static_cast<uint8_t>(((b & 0x0F) << 4) | (c >> 2));
        out[3 * g + 2] = static_cast<uint8_t>(((c & 0x03) << 6) | d);
    }
}

void unpack_fp6(const uint8_t* packed, int64_t n, uint8_t* codes) {
    for (int64_t g = 0; g < n / 4; ++g) {
        const uint8_t p0 = packed[3 * g], p1 = packed[3 * g + 1], p2 = packed[3 * g + 2];
        codes[4 * g] = p0 >> 2;
        codes[4 * g + 1] = static_cast<uint8_t>(((p0 & 0x03) << 4) | (p1 >> 4));
        codes[4 * g + 2] = static_cast<uint8_t>(((p1 & 0x0F) << 2) | (p2 >> 6));
        codes[4 * g + 3] = p2 & 0x3F;
    }
}

namespace {

// Along each column, `rows` consecutive codes of `bits` bits share one little-endian word of
// `bytes` bytes (3 bytes for eight INT3 rows, else 1).
struct IntRowGroups {
    uint32_t mask;
    int64_t rows;
    int64_t bytes;
};

IntRowGroups int_row_groups(int bits) {
    return {(1u << bits) - 1u, int_rows_per_group(bits), bits == 3 ? 3 : 1};
}

}  // namespace

int64_t int_rows_per_group(int bits) { return bits == 3 ? 8 : 8 / bits; }

int64_t int_packed_rows(int64_t rows, int bits) {
    const IntRowGroups G = int_row_groups(bits);
    return rows / G.rows * G.bytes;
}

void pack_int_rows(const uint8_t* codes, int64_t rows, int64_t cols, int bits, uint8_t* out) {
    if (bits == 8) {
        std::memcpy(out, codes, static_cast<size_t>(rows * cols));
        return;
    }
    const IntRowGroups G = int_row_groups(bits);
    for (int64_t g = 0; g < rows / G.rows; ++g)
        for (int64_t c = 0; c < cols; ++c) {
            uint32_t acc = 0;
            for (int64_t j = 0; j < G.rows; ++j) acc |= (codes[(g * G.rows + j) * cols + c] & G.mask) << (bits * j);
            for (int64_t k = 0; k < G.bytes; ++k)
                out[(g * G.bytes + k) * cols + c] = static_cast<uint8_t>(acc >> (8 * k));
        }
}

void unpack_int_rows(const uint8_t* packed, int64_t rows, int64_t cols, int bits, bool sign_extend,
                     uint8_t* codes) {
    if (bits == 8) {
        std::memcpy(codes, packed, static_cast<size_t>(rows * cols));
        return;
    }
    const IntRowGroups G = int_row_groups(bits);
    for (int64_t g = 0; g < rows / G.rows; ++g)
        for (int64_t c = 0; c < cols; ++c) {
            uint32_t acc = 0;
            for (int64_t k = 0; k < G.bytes; ++k)
                acc |= static_cast<uint32_t>(packed[(g * G.bytes + k) * cols + c]) << (8 * k);
            for (int64_t j = 0; j < G.rows; ++j) {
                uint32_t v = (acc >> (bits * j)) & G.mask;
                if (sign_extend && (v >> (bits - 1))) v |= ~G.mask;
                codes[(g * G.rows + j) * cols + c] = static_cast<uint8_t>(v);
            }
        }
}

}  // namespace ql::kernels
