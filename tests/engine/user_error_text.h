// SPDX-License-Identifier: GPL-3.0-or-later
// The message of the UserError `f` throws, or "no error": tests assert on what users read.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <string>

#include "engine/core/errors.h"

namespace ql::test {

inline std::string user_error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

// user_error_text(f) with files limited to `max_file_bytes`: a write past the limit fails with
// EFBIG (SIGXFSZ is ignored), as a full disk fails with ENOSPC. The old limit is restored.
inline std::string user_error_text_with_file_size_limit(uint64_t max_file_bytes, const std::function<void()>& f) {
    struct rlimit old {};
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = max_file_bytes;
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) return "setrlimit(RLIMIT_FSIZE) failed";
    const std::string text = user_error_text(f);
    setrlimit(RLIMIT_FSIZE, &old);
    return text;
}

}  // namespace ql::test
