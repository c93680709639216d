// SPDX-License-Identifier: GPL-3.0-or-later
// A fresh folder for a test's files: /tmp/quantlab-TAG-XXXXXX (mkdtemp), left in place so that
// a failing test's files can be looked at.
#pragma once

#include <stdlib.h>

#include <stdexcept>
#include <string>

namespace ql::test {

inline std::string temp_dir(const char* tag) {
    std::string tmpl = std::string("/tmp/quantlab-") + tag + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    return tmpl;
}

}  // namespace ql::test
