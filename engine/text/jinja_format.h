// SPDX-License-Identifier: GPL-3.0-or-later
// Python's two string formatting languages for chat templates: printf-style `fmt % args` (the
// `%` operator and Jinja2's `format` filter; CPython Objects/unicodeobject.c PyUnicode_Format) and
// str.format (the sandbox's SandboxedFormatter: fields, attribute and index lookups through the
// sandbox, !r/!s conversions and the format-spec mini-language of str, int and float).
#pragma once

#include <string>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

// fmt % args. `markup`: fmt is a markupsafe.Markup, whose % escapes str arguments.
std::string percent_format(Runtime& rt, const std::string& fmt, const Value& args, bool markup);
// fmt.format(*args, **kwargs).
std::string str_format(Runtime& rt, const std::string& fmt, const CallArgs& args);
// format(value, spec) for str, int, bool, float and (empty spec only) everything else.
std::string format_value(const Value& value, const std::string& spec);

}  // namespace ql::jinja
