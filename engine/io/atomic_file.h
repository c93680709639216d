// SPDX-License-Identifier: GPL-3.0-or-later
// Crash-safe file writing (EXPORT.md "Safety of writing"): write "<path>.partial" in the target
// folder, fsync, rename over the final name. On any error the partial file is removed and a
// UserError names the path and the reason (e.g. "No space left on device"); the final name is
// never left half-written.
#pragma once

#include <string>

namespace ql {

void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace ql
