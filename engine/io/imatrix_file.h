// SPDX-License-Identifier: GPL-3.0-or-later
// The two importance-matrix files llama.cpp uses (tools/imatrix/imatrix.cpp save_imatrix /
// save_imatrix_legacy, common/imatrix-loader.cpp common_imatrix_load; GGUF_KQUANTS.md section 6):
//   GGUF (default)  general.type = "imatrix", imatrix.datasets (array of strings),
//                   imatrix.chunk_count (u32), imatrix.chunk_size (u32); per entry, in name order,
//                   "<name>.in_sum2" F32 [ne0, n_mat] and "<name>.counts" F32 [1, n_mat]
//                   (QuantLab also writes "<name>.in_sum" F32 [ne0, n_mat], the sum of x, which
//                   newer llama.cpp writes and every reader skips when it does not know it).
//   legacy .dat     little-endian int32 n_entries; per entry (name order): int32 len, the name
//                   (no NUL), int32 ncall, int32 nval, nval float32 = sum / count * ncall with
//                   ncall = ceil(max(counts) / chunk_size) (a count of 0 stores 1 * ncall); then
//                   optionally int32 chunk_count, int32 len and the dataset name.
// Reading detects the format by the GGUF magic, as common_imatrix_load does. A legacy file
// reads back as sum_sq = stored value, counts = {ncall} and chunk_size 0, so that sum_sq / count
// is the mean llama-quantize uses (value / ncall) either way.
// Every problem (truncated, lying lengths or counts, wrong tensor types, a missing key) is a
// UserError naming the file and the field.
#pragma once

#include <string>

#include "engine/core/importance_matrix.h"

namespace ql {

enum class ImatrixFormat { Gguf, Legacy };

ImatrixFormat parse_imatrix_format(const std::string& name);  // "gguf" | "dat"; UserError otherwise
const char* imatrix_format_name(ImatrixFormat f);             // "gguf" | "dat"

ImportanceMatrix read_imatrix(const std::string& path);
ImportanceMatrix parse_imatrix(const std::string& bytes, const std::string& name);  // an in-memory file

// Crash-safe (".partial", fsync, rename); an existing file is replaced only with `force`.
void write_imatrix(const ImportanceMatrix& m, const std::string& path, ImatrixFormat format, bool force);
std::string legacy_imatrix_bytes(const ImportanceMatrix& m);  // the .dat image (tests, fuzzing)

}  // namespace ql
