// SPDX-License-Identifier: GPL-3.0-or-later
// Jinja2's built-in filters (jinja2/filters.py FILTERS) with transformers' `tojson` in place of
// Jinja2's (chat_template_utils._compile_jinja_template). The filters that return generators in
// Jinja2 (map, select, reject, selectattr, rejectattr, unique, items, batch, slice) return
// generators here too: single-pass, always true, without len(). A few filters no chat template
// uses (urlize, urlencode, wordwrap, xmlattr, filesizeformat, pprint, random, striptags) are known
// names, so templates naming them still compile, but raise when applied.
#pragma once

#include <string>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

// Whether Jinja2's environment has a filter of this name (an unknown one is a compile error
// outside {% if %} conditions).
bool is_jinja_filter(const std::string& name);
// value|name(*args, **kwargs).
Value apply_filter(Runtime& rt, const std::string& name, const Value& value, CallArgs& args);

}  // namespace ql::jinja
