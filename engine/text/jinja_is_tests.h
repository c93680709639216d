// SPDX-License-Identifier: GPL-3.0-or-later
// Jinja2's built-in tests (`x is defined`, `x is string` ...; jinja2/tests.py TESTS), with
// Python's isinstance/len/iter behaviour for each template value.
#pragma once

#include <string>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

bool is_jinja_test(const std::string& name);
// value is name(*args, **kwargs).
bool apply_test(Runtime& rt, const std::string& name, const Value& value, CallArgs& args);

}  // namespace ql::jinja
