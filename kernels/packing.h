// SPDX-License-Identifier: GPL-3.0-or-later
// Packing of unpacked element codes (one per byte) into the byte layouts export formats store.
// Sources: NVFP4/MXFP4 (Model Optimizer export, EXPORT.md section 1): element 2k in the LOW
// nibble; NF4 (bitsandbytes): element 2k in the HIGH nibble; FP6 (torchao pack_uint6): four
// 6-bit codes in three bytes, first code in the top bits; INT4 AWQ (EXPORT.md): two's
// complement nibbles packed along the OUTPUT dimension (row 2i low, 2i+1 high).
#pragma once

#include <cstdint>

namespace ql::kernels {

enum class NibbleOrder : uint8_t { LowFirst, HighFirst };

// codes: rows*cols bytes (low 4 bits used); out: rows * ceil(cols/2) bytes. An odd last
// element leaves the other nibble of its byte zero.
void pack_nibbles(const uint8_t* codes, int64_t rows, int64_t cols, NibbleOrder order, uint8_t* out);
void unpack_nibbles(const uint8_t* packed, int64_t rows, int64_t cols, NibbleOrder order, uint8_t* codes);

// n % 4 == 0; out: 3n/4 bytes.
void pack_fp6(const uint8_t* codes, int64_t n, uint8_t* out);
void unpack_fp6(const uint8_t* packed, int64_t n, uint8_t* codes);

// Integer codes of a [rows, cols] tensor packed along rows (the output dimension of a weight):
// bits 8: a copy; 4: two rows per byte (row 2i low nibble); 2: four rows per byte (row 4i in
// bits 0-1); 3: eight rows in three bytes, a little-endian 24-bit stream per column (row 8i in
// bits 0-2 of the first byte). rows must be a multiple of rows_per_group(bits).
// out: packed_rows(rows, bits) * cols bytes.
int64_t int_rows_per_group(int bits);
int64_t int_packed_rows(int64_t rows, int bits);
void pack_int_rows(const uint8_t* codes, int64_t rows, int64_t cols, int bits, uint8_t* out);
// sign_extend: restore two's complement bytes (symmetric codes); otherwise unsigned.
void unpack_int_rows(const uint8_t* packed, int64_t rows, int64_t cols, int bits, bool sign_extend,
                     uint8_t* codes);

}  // namespace ql::kernels
