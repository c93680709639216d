// SPDX-License-Identifier: GPL-3.0-or-later
// The message of the UserError `f` throws, or "no error": tests assert on what users read.
#pragma once

#include <functional>
#include <string>

#include "engine/api/errors.h"

namespace ql::test {

inline std::string user_error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace ql::test
