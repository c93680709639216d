// SPDX-License-Identifier: GPL-3.0-or-later
// Errors the engine reports. A UserError is a problem with what the user gave us (a file, a
// field, an option): the CLI prints its message on one line and exits with 1, the GUI shows it.
// Anything else escaping the engine is an internal error (CLI exit 2).
#pragma once

#include <stdexcept>
#include <string>

namespace ql {

class UserError : public std::runtime_error {
public:
    explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ql
