// SPDX-License-Identifier: GPL-3.0-or-later
// Attribute, item and slice access as ImmutableSandboxedEnvironment does it
// (jinja2/sandbox.py getattr/getitem, unsafe_undefined, modifies_known_mutable): `a.b` tries
// Python's attribute (a method of str/list/dict, a namespace or loop attribute) before a[b], and
// a[b] tries the item before the attribute; a missing one gives Undefined, a dunder or a mutating
// method of list/dict gives an undefined that raises SecurityError when used. Slices bypass the
// sandbox and are Python's own.
#pragma once

#include <optional>
#include <string>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

Value get_attribute(Runtime& rt, const Value& obj, const std::string& name);
Value get_item(Runtime& rt, const Value& obj, const Value& key);
// obj[start:stop:step]; null pointers are omitted parts.
Value get_slice(Runtime& rt, const Value& obj, const Value* start, const Value* stop, const Value* step);
// Python's getattr(obj, name) alone: a method bound to obj, or an object's attribute; nullopt for
// AttributeError. `unsafe` is set when the sandbox refuses the attribute.
std::optional<Value> python_attribute(Runtime& rt, const Value& obj, const std::string& name, bool& unsafe);

// The methods of str, list, tuple and dict (jinja_methods.cpp): a bound method, or nullopt when
// the type has no such attribute. `unsafe` is set for methods that would mutate (the immutable
// sandbox refuses them).
std::optional<Value> builtin_method(const Value& self, const std::string& name, bool& unsafe);

}  // namespace ql::jinja
