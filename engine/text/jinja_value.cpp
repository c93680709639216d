// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_value.h"

#include <algorithm>

#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

const std::vector<Value> kJinjaNoItems;
thread_local Runtime* jinja_tracking_runtime = nullptr;
const std::vector<std::pair<Value, Value>> kJinjaNoPairs;

int jinja_value_depth(const Value& v) {
    if (v.kind == Kind::List || v.kind == Kind::Tuple) return v.seq->depth;
    if (v.kind == Kind::Dict) return v.map->depth;
    return 0;
}

void jinja_check_depth(int depth) {
    if (depth > kMaxValueDepth)
        throw Error("RecursionError", "values nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

}  // namespace

Value Value::undefined(std::string message, bool security) {
    Value v;
    v.kind = Kind::Undefined;
    v.flag = security;
    v.text = std::make_shared<const std::string>(std::move(message));
    return v;
}

Value Value::none() {
    Value v;
    v.kind = Kind::None;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.flag = b;
    return v;
}

Value Value::integer(int64_t x) {
    Value v;
    v.kind = Kind::Int;
    v.i = x;
    return v;
}

Value Value::real(double x) {
    Value v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
}

Value Value::string(std::string s, bool markup) {
    Value v;
    v.kind = Kind::String;
    v.flag = markup;
    v.text = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items) {
    Value v;
    v.kind = Kind::List;
    auto s = std::make_shared<Sequence>();
    for (const Value& x : items) s->depth = std::max(s->depth, jinja_value_depth(x) + 1);
    jinja_check_depth(s->depth);
    s->items = std::move(items);
    v.seq = std::move(s);
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.kind = Kind::Tuple;
    return v;
}

Value Value::dict(std::vector<std::pair<Value, Value>> items, bool keys_unique) {
    Value v;
    v.kind = Kind::Dict;
    auto m = std::make_shared<Mapping>();
    for (const auto& kv : items) m->depth = std::max({m->depth, jinja_value_depth(kv.first) + 1, jinja_value_depth(kv.second) + 1});
    jinja_check_depth(m->depth);
    // Later duplicates replace earlier values in place, as {k: 1, k: 2} does in Python.
    if (keys_unique) {
        m->items = std::move(items);
        v.map = std::move(m);
        return v;
    }
    m->items.reserve(items.size());
    for (auto& kv : items) {
        bool replaced = false;
        for (auto& existing : m->items) {
            if (equals(existing.first, kv.first)) {
                existing.second = std::move(kv.second);
                replaced = true;
                break;
            }
        }
        if (!replaced) m->items.push_back(std::move(kv));
    }
    v.map = std::move(m);
    return v;
}

ObjectTracking::ObjectTracking(Runtime& rt) : previous_(jinja_tracking_runtime) { jinja_tracking_runtime = &rt; }
ObjectTracking::~ObjectTracking() { jinja_tracking_runtime = previous_; }

Value Value::object(std::shared_ptr<Object> o) {
    if (jinja_tracking_runtime) jinja_tracking_runtime->track(o);
    Value v;
    v.kind = Kind::Object;
    v.obj = std::move(o);
    return v;
}

const std::vector<Value>& Value::items() const { return seq ? seq->items : kJinjaNoItems; }
const std::vector<std::pair<Value, Value>>& Value::pairs() const { return map ? map->items : kJinjaNoPairs; }

const Value* Mapping::find(const Value& key) const {
    if (key.kind == Kind::String) return find(key.str());
    for (const auto& kv : items)
        if (equals(kv.first, key)) return &kv.second;
    return nullptr;
}

const Value* Mapping::find(std::string_view key) const {
    for (const auto& kv : items)
        if (kv.first.kind == Kind::String && kv.first.str() == key) return &kv.second;
    return nullptr;
}

std::string Object::repr() const { return std::string("<") + type_name() + " object>"; }
std::optional<Value> Object::attribute(Runtime&, const std::string&) { return std::nullopt; }
Value Object::call(Runtime&, CallArgs&) { throw Error("TypeError", std::string("'") + type_name() + "' object is not callable"); }
std::vector<Value> Object::iterate(Runtime&) {
    throw Error("TypeError", std::string("'") + type_name() + "' object is not iterable");
}
std::optional<Value> Object::subscript(Runtime&, const Value&) { return std::nullopt; }

std::string type_name(const Value& v) {
    switch (v.kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return v.flag ? "Markup" : "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Object: return v.obj->type_name();
    }
    return "object";
}

bool truthy(const Value& v) {
    switch (v.kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.flag;
    case Kind::Int: return v.i != 0;
    case Kind::Float: return v.f != 0.0;
    case Kind::String: return !v.text->empty();
    case Kind::List:
    case Kind::Tuple: return !v.seq->items.empty();
    case Kind::Dict: return !v.map->items.empty();
    case Kind::Object: return v.obj->truthy();
    }
    return false;
}

std::string to_str(const Value& v, int depth) {
    switch (v.kind) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return v.flag ? "True" : "False";
    case Kind::Int: return std::to_string(v.i);
    case Kind::Float: return py_float_repr(v.f);
    case Kind::String: return *v.text;
    default: return repr(v, depth);
    }
}

std::string repr(const Value& v, int depth) {
    jinja_check_depth(depth);
    switch (v.kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::String: return v.flag ? "Markup(" + py_str_repr(*v.text) + ")" : py_str_repr(*v.text);
    case Kind::List:
    case Kind::Tuple: {
        const bool tuple = v.kind == Kind::Tuple;
        std::string out = tuple ? "(" : "[";
        const auto& items = v.seq->items;
        for (size_t k = 0; k < items.size(); ++k) {
            if (k) out += ", ";
            out += repr(items[k], depth + 1);
        }
        if (tuple && items.size() == 1) out += ",";
        out += tuple ? ")" : "]";
        return out;
    }
    case Kind::Dict: {
        std::string out = "{";
        bool first = true;
        for (const auto& kv : v.map->items) {
            if (!first) out += ", ";
            first = false;
            out += repr(kv.first, depth + 1);
            out += ": ";
            out += repr(kv.second, depth + 1);
        }
        return out + "}";
    }
    case Kind::Object: return v.obj->repr();
    default: return to_str(v, depth);
    }
}

bool equals(const Value& a, const Value& b, int depth) {
    jinja_check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.kind == Kind::Float || b.kind == Kind::Float) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case Kind::Undefined:
    case Kind::None: return true;  // Undefined.__eq__: same type
    case Kind::String: return *a.text == *b.text;
    case Kind::List:
    case Kind::Tuple: {
        const auto& x = a.seq->items;
        const auto& y = b.seq->items;
        if (x.size() != y.size()) return false;
        for (size_t k = 0; k < x.size(); ++k)
            if (!equals(x[k], y[k], depth + 1)) return false;
        return true;
    }
    case Kind::Dict: {
        if (a.map->items.size() != b.map->items.size()) return false;
        for (const auto& kv : a.map->items) {
            const Value* other = b.map->find(kv.first);
            if (!other || !equals(kv.second, *other, depth + 1)) return false;
        }
        return true;
    }
    case Kind::Object: return a.obj->equals(*b.obj);
    default: return false;
    }
}

bool ordered_compare(const std::string& op, const Value& a, const Value& b, int depth) {
    jinja_check_depth(depth);
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    auto apply = [&](auto x, auto y) {
        if (op == "<") return x < y;
        if (op == "<=") return x <= y;
        if (op == ">") return x > y;
        return x >= y;
    };
    if (a.is_number() && b.is_number()) {
        if (a.kind == Kind::Float || b.kind == Kind::Float) return apply(a.as_double(), b.as_double());
        return apply(a.as_int(), b.as_int());
    }
    if (a.kind == Kind::String && b.kind == Kind::String) {
        // UTF-8 byte order is code point order.
        return apply(a.text->compare(*b.text), 0);
    }
    if ((a.kind == Kind::List || a.kind == Kind::Tuple) && a.kind == b.kind) {
        // Python sequence comparison: the first items that differ decide, else the lengths.
        const auto& x = a.seq->items;
        const auto& y = b.seq->items;
        size_t k = 0;
        while (k < x.size() && k < y.size() && equals(x[k], y[k], depth + 1)) ++k;
        if (k < x.size() && k < y.size()) return ordered_compare(op, x[k], y[k], depth + 1);
        return apply(x.size(), y.size());
    }
    throw Error("TypeError", "'" + op + "' not supported between instances of '" + type_name(a) + "' and '" +
                                 type_name(b) + "'");
}

int64_t length_of(const Value& v) {
    switch (v.kind) {
    case Kind::Undefined: return 0;
    case Kind::String: return code_point_count(*v.text);
    case Kind::List:
    case Kind::Tuple: return static_cast<int64_t>(v.seq->items.size());
    case Kind::Dict: return static_cast<int64_t>(v.map->items.size());
    case Kind::Object:
        if (auto n = v.obj->length()) return *n;
        break;
    default: break;
    }
    throw Error("TypeError", "object of type '" + type_name(v) + "' has no len()");
}

bool is_iterable(const Value& v) {
    switch (v.kind) {
    case Kind::Undefined:
    case Kind::String:
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict: return true;
    case Kind::Object: return v.obj->iterable();
    default: return false;
    }
}

std::vector<Value> iterate(Runtime& rt, const Value& v) {
    std::vector<Value> out;
    switch (v.kind) {
    case Kind::Undefined: return out;
    case Kind::String: {
        const std::string& s = *v.text;
        rt.charge(static_cast<int64_t>(s.size()));
        for (size_t k = 0; k < s.size();) {
            size_t n = 1;
            while (k + n < s.size() && (static_cast<unsigned char>(s[k + n]) & 0xC0) == 0x80) ++n;
            out.push_back(Value::string(s.substr(k, n)));  // iter(Markup) yields plain str
            k += n;
        }
        return out;
    }
    case Kind::List:
    case Kind::Tuple: return v.seq->items;
    case Kind::Dict:
        out.reserve(v.map->items.size());
        for (const auto& kv : v.map->items) out.push_back(kv.first);
        return out;
    case Kind::Object:
        if (v.obj->iterable()) return v.obj->iterate(rt);
        break;
    default: break;
    }
    throw Error("TypeError", "'" + type_name(v) + "' object is not iterable");
}

bool contains(Runtime& rt, const Value& container, const Value& item) {
    switch (container.kind) {
    case Kind::String:
        if (item.kind != Kind::String)
            throw Error("TypeError", "'in <string>' requires string as left operand, not " + type_name(item));
        return container.text->find(*item.text) != std::string::npos;
    case Kind::Dict:
        require_hashable(item);
        return container.map->find(item) != nullptr;
    case Kind::Undefined: return false;
    case Kind::List:
    case Kind::Tuple:
        for (const Value& x : container.seq->items)
            if (equals(x, item)) return true;
        return false;
    case Kind::Object:
        if (container.obj->iterable()) {
            for (const Value& x : container.obj->iterate(rt))
                if (equals(x, item)) return true;
            return false;
        }
        break;
    default: break;
    }
    throw Error("TypeError", "argument of type '" + type_name(container) + "' is not iterable");
}

void raise_undefined(const Value& v) {
    throw Error(v.flag ? "SecurityError" : "UndefinedError", v.text ? *v.text : std::string("undefined value"));
}

void require_hashable(const Value& v) {
    if (v.kind == Kind::List || v.kind == Kind::Dict) throw Error("TypeError", "unhashable type: '" + type_name(v) + "'");
    if (v.kind == Kind::Tuple)
        for (const Value& x : v.seq->items) require_hashable(x);
}

Value make_string(Runtime& rt, std::string s, bool markup) {
    if (s.size() > rt.max_string_bytes())
        throw Error("LimitError", "a string of " + std::to_string(s.size()) + " bytes exceeds the limit of " +
                                      std::to_string(rt.max_string_bytes()) + " bytes (max_output_bytes)");
    rt.charge(static_cast<int64_t>(s.size() / 64));
    return Value::string(std::move(s), markup);
}

Value make_list(Runtime& rt, std::vector<Value> items, bool tuple) {
    if (items.size() > rt.max_string_bytes())
        throw Error("LimitError", "a list of " + std::to_string(items.size()) + " items exceeds the limit of " +
                                      std::to_string(rt.max_string_bytes()) + " items (max_output_bytes)");
    rt.charge(static_cast<int64_t>(items.size()));
    return tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

}  // namespace ql::jinja
