// SPDX-License-Identifier: GPL-3.0-or-later
// Reading a whole (small) file into memory: configs, indexes, tokenizers, token and image files.
// Large checkpoints are memory-mapped instead (safetensors_file.h).
#pragma once

#include <string>

namespace ql {

// The file's bytes. Throws UserError "<path>: cannot open[ the <what>]: <reason>" or
// "<path>: cannot read[ the <what>]", so the message names the file and what it was meant to be;
// a file larger than the machine's memory is refused before reading (allocation_limit.h).
std::string read_whole_file(const std::string& path, const std::string& what = "");

}  // namespace ql
