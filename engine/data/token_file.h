// SPDX-License-Identifier: GPL-3.0-or-later
// Pre-tokenized token files (docs/DATA.md "Token files"):
// - .npy, 1-D (a token stream) or 2-D [sequences, length] (one sequence per row), dtype int32,
//   int64, uint16 or uint32;
// - .bin, raw little-endian token ids without a header, as nanoGPT's prepare.py writes them
//   (uint16); the dtype is given ("uint16" / "uint32") or inferred: uint32 when the model's
//   vocabulary has more than 65536 ids, else uint16.
// Every id must lie in [0, vocab_size); errors name the file and the first bad position.
// Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

struct TokenFile {
    std::vector<int64_t> tokens;  // C order
    int64_t rows = 0;             // 2-D .npy: number of sequences; 0 for a stream
    int64_t columns = 0;          // 2-D .npy: sequence length
};

// vocab_size 0 skips the range check. dtype_hint is used for .bin only ("" = infer).
TokenFile read_token_file(const std::string& path, int64_t vocab_size, const std::string& dtype_hint);

bool is_token_file_path(const std::string& path);  // ends in .npy or .bin

}  // namespace ql
