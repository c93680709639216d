// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_access.h"

#include <algorithm>

#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

// jinja2.utils.object_type_repr, as the undefined's message uses it.
std::string jinja_object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    return type_name(v) + " object";
}

Value jinja_missing_attribute(const Value& obj, const std::string& name) {
    return Value::undefined("'" + jinja_object_type_repr(obj) + "' has no attribute '" + name + "'");
}

Value jinja_missing_item(const Value& obj, const Value& key) {
    if (key.kind == Kind::String) return jinja_missing_attribute(obj, key.str());
    return Value::undefined(jinja_object_type_repr(obj) + " has no element " + repr(key));
}

Value jinja_unsafe(const Value& obj, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.", true);
}

bool jinja_is_dunder(const std::string& name) {
    return name.size() > 4 && name.compare(0, 2, "__") == 0 && name.compare(name.size() - 2, 2, "__") == 0;
}

// Python's obj[key] for the built-in types; nullopt where Python raises TypeError or LookupError
// (which the sandbox's getitem catches).
std::optional<Value> jinja_python_item(Runtime& rt, const Value& obj, const Value& key) {
    switch (obj.kind) {
    case Kind::Dict: {
        if (key.kind == Kind::List || key.kind == Kind::Dict) return std::nullopt;  // unhashable: TypeError
        const Value* v = obj.map->find(key);
        if (v) return *v;
        return std::nullopt;
    }
    case Kind::List:
    case Kind::Tuple: {
        if (!key.is_int_like()) return std::nullopt;
        const auto n = static_cast<int64_t>(obj.items().size());
        int64_t k = key.as_int();
        if (k < 0) k += n;
        if (k < 0 || k >= n) return std::nullopt;
        return obj.items()[static_cast<size_t>(k)];
    }
    case Kind::String: {
        if (!key.is_int_like()) return std::nullopt;
        const std::string& s = obj.str();
        rt.charge(static_cast<int64_t>(s.size() / 64));
        int64_t k = key.as_int();
        if (is_ascii(s)) {
            const auto n = static_cast<int64_t>(s.size());
            if (k < 0) k += n;
            if (k < 0 || k >= n) return std::nullopt;
            return Value::string(s.substr(static_cast<size_t>(k), 1), obj.flag);
        }
        const std::u32string u = decode_utf8(s);
        const auto n = static_cast<int64_t>(u.size());
        if (k < 0) k += n;
        if (k < 0 || k >= n) return std::nullopt;
        return Value::string(encode_utf8(u.substr(static_cast<size_t>(k), 1)), obj.flag);
    }
    case Kind::Object:
        if (obj.obj->has_getitem()) {
            try {
                return obj.obj->subscript(rt, key);
            } catch (const Error& e) {
                if (e.kind() == "TypeError" || e.kind() == "IndexError" || e.kind() == "KeyError") return std::nullopt;
                throw;
            }
        }
        return std::nullopt;
    default: return std::nullopt;
    }
}

// PySlice_GetIndicesEx / PySlice_AdjustIndices.
void jinja_slice_indices(int64_t length, const Value* start, const Value* stop, const Value* step, int64_t& b, int64_t& e,
                         int64_t& s) {
    auto index = [](const Value* v) -> std::optional<int64_t> {
        if (!v || v->is_none()) return std::nullopt;
        if (!v->is_int_like())
            throw Error("TypeError", "slice indices must be integers or None or have an __index__ method");
        return v->as_int();
    };
    const auto st = index(step);
    s = st.value_or(1);
    if (s == 0) throw Error("ValueError", "slice step cannot be zero");
    const auto sb = index(start);
    const auto se = index(stop);
    if (s > 0) {
        b = sb.value_or(0);
        e = se.value_or(length);
    } else {
        b = sb.value_or(length - 1);
        e = se.value_or(-length - 1);
    }
    auto adjust = [&](int64_t& x, bool given) {
        if (!given) return;
        if (x < 0) {
            x += length;
            if (x < 0) x = s < 0 ? -1 : 0;
        } else if (x >= length) {
            x = s < 0 ? length - 1 : length;
        }
    };
    adjust(b, sb.has_value());
    adjust(e, se.has_value());
    if (!sb && s < 0) b = length - 1;
    if (!se && s < 0) e = -1;
}

}  // namespace

std::optional<Value> python_attribute(Runtime& rt, const Value& obj, const std::string& name, bool& unsafe) {
    unsafe = false;
    if (jinja_is_dunder(name)) {
        // Every Python object has dunder attributes; the sandbox refuses them all.
        unsafe = true;
        return std::nullopt;
    }
    switch (obj.kind) {
    case Kind::Tuple:
        for (size_t k = 0; k < obj.seq->fields.size(); ++k)
            if (obj.seq->fields[k] == name) return obj.items()[k];
        return builtin_method(obj, name, unsafe);
    case Kind::String:
    case Kind::List:
    case Kind::Dict: return builtin_method(obj, name, unsafe);
    case Kind::Bool:
    case Kind::Int:
        // int's numeric attributes (the numbers.Integral protocol).
        if (name == "real" || name == "numerator") return Value::integer(obj.as_int());
        if (name == "imag") return Value::integer(0);
        if (name == "denominator") return Value::integer(1);
        return std::nullopt;
    case Kind::Float:
        if (name == "real") return obj;
        if (name == "imag") return Value::real(0.0);
        return std::nullopt;
    case Kind::Object: {
        if (auto v = obj.obj->attribute(rt, name)) {
            if (!name.empty() && name[0] == '_') {
                unsafe = true;
                return std::nullopt;
            }
            return v;
        }
        return std::nullopt;
    }
    default: return std::nullopt;
    }
}

Value get_attribute(Runtime& rt, const Value& obj, const std::string& name) {
    if (obj.is_undefined()) raise_undefined(obj);
    bool unsafe = false;
    if (auto v = python_attribute(rt, obj, name, unsafe)) return *v;
    if (unsafe) return jinja_unsafe(obj, name);
    if (auto v = jinja_python_item(rt, obj, Value::string(name))) return *v;
    return jinja_missing_attribute(obj, name);
}

Value get_item(Runtime& rt, const Value& obj, const Value& key) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (auto v = jinja_python_item(rt, obj, key)) return *v;
    if (key.kind == Kind::String) {
        bool unsafe = false;
        if (auto v = python_attribute(rt, obj, key.str(), unsafe)) return *v;
        if (unsafe) return jinja_unsafe(obj, key.str());
    }
    return jinja_missing_item(obj, key);
}

Value get_slice(Runtime& rt, const Value& obj, const Value* start, const Value* stop, const Value* step) {
    if (obj.is_undefined()) raise_undefined(obj);
    int64_t b, e, s;
    switch (obj.kind) {
    case Kind::String: {
        rt.charge(static_cast<int64_t>(obj.str().size() / 64));
        const std::u32string u = decode_utf8(obj.str());
        jinja_slice_indices(static_cast<int64_t>(u.size()), start, stop, step, b, e, s);
        std::u32string out;
        for (int64_t k = b; s > 0 ? k < e : k > e; k += s) out += u[static_cast<size_t>(k)];
        return make_string(rt, encode_utf8(out), obj.flag);
    }
    case Kind::List:
    case Kind::Tuple: {
        const auto& items = obj.items();
        jinja_slice_indices(static_cast<int64_t>(items.size()), start, stop, step, b, e, s);
        std::vector<Value> out;
        for (int64_t k = b; s > 0 ? k < e : k > e; k += s) out.push_back(items[static_cast<size_t>(k)]);
        return make_list(rt, std::move(out), obj.kind == Kind::Tuple);
    }
    case Kind::Object:
        if (auto* r = dynamic_cast<RangeObject*>(obj.obj.get())) {
            jinja_slice_indices(r->size(), start, stop, step, b, e, s);
            // CPython compute_slice: range(start + b*step, start + e*step, step*s).
            return Value::object(std::make_shared<RangeObject>(r->at(b), r->at(e), r->step() * s));
        }
        break;
    case Kind::Dict: throw Error("TypeError", "unhashable type: 'slice'");
    default: break;
    }
    throw Error("TypeError", "'" + type_name(obj) + "' object is not subscriptable");
}

}  // namespace ql::jinja
