// SPDX-License-Identifier: GPL-3.0-or-later
// The Python objects a chat template meets besides plain data: transformers' TemplateNamespace,
// Jinja2's LoopContext, Cycler and Joiner (jinja2/runtime.py, jinja2/utils.py), range objects
// (the sandbox's safe_range), dict views, generators (what Jinja2's map/select/items filters
// return: lazy, single-pass, always true, without len()) and built-in functions and bound methods.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

// transformers TemplateNamespace (a jinja2.utils.Namespace that refuses underscore names).
class NamespaceObject : public Object {
public:
    const char* type_name() const override { return "TemplateNamespace"; }
    std::string repr() const override;
    std::optional<Value> attribute(Runtime& rt, const std::string& name) override;
    // ns[name] = value ({% set ns.name = value %}); SecurityError for names starting with '_'.
    void set(const std::string& name, Value value);
    void release() override { attrs_.clear(); }

private:
    std::vector<std::pair<std::string, Value>> attrs_;
};

// Built-in callables: the environment's globals and the filters' helper functions.
class FunctionObject : public Object {
public:
    using Fn = std::function<Value(Runtime&, CallArgs&)>;
    FunctionObject(std::string name, Fn fn, std::string type = "function")
        : name_(std::move(name)), type_(std::move(type)), fn_(std::move(fn)) {}
    const char* type_name() const override { return type_.c_str(); }
    std::string repr() const override { return "<" + type_ + " " + name_ + ">"; }
    bool callable() const override { return true; }
    Value call(Runtime& rt, CallArgs& args) override {
        if (!fn_) throw Error("RuntimeError", name_ + "() called after the rendering ended");
        return fn_(rt, args);
    }
    const std::string& name() const { return name_; }
    void release() override { fn_ = nullptr; }

private:
    std::string name_;
    std::string type_;
    Fn fn_;
};

// A method bound to its receiver, e.g. "a b".split.
class BoundMethodObject : public Object {
public:
    using Fn = std::function<Value(Runtime&, const Value& self, CallArgs&)>;
    BoundMethodObject(Value self, std::string name, Fn fn) : self_(std::move(self)), name_(std::move(name)), fn_(std::move(fn)) {}
    const char* type_name() const override { return "builtin_function_or_method"; }
    std::string repr() const override;
    bool callable() const override { return true; }
    Value call(Runtime& rt, CallArgs& args) override;
    void release() override {
        self_ = Value();
        fn_ = nullptr;
    }

private:
    Value self_;
    std::string name_;
    Fn fn_;
};

// range(start, stop, step); materialised only when iterated.
class RangeObject : public Object {
public:
    RangeObject(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
    const char* type_name() const override { return "range"; }
    std::string repr() const override;
    bool truthy() const override { return size() > 0; }
    std::optional<int64_t> length() const override { return size(); }
    bool iterable() const override { return true; }
    std::vector<Value> iterate(Runtime& rt) override;
    std::optional<Value> subscript(Runtime& rt, const Value& key) override;
    bool has_getitem() const override { return true; }
    bool equals(const Object& other) const override;
    std::optional<Value> attribute(Runtime& rt, const std::string& name) override;
    int64_t size() const;
    int64_t at(int64_t k) const { return start_ + k * step_; }
    int64_t start() const { return start_; }
    int64_t step() const { return step_; }

private:
    int64_t start_, stop_, step_;
};

// dict.keys() / values() / items(): sized and iterable, not indexable.
class DictViewObject : public Object {
public:
    enum class Which { Keys, Values, Items };
    DictViewObject(Value dict, Which which) : dict_(std::move(dict)), which_(which) {}
    const char* type_name() const override;
    std::string repr() const override;
    bool truthy() const override { return !dict_.pairs().empty(); }
    std::optional<int64_t> length() const override { return static_cast<int64_t>(dict_.pairs().size()); }
    bool iterable() const override { return true; }
    std::vector<Value> iterate(Runtime& rt) override;
    std::vector<Value> elements() const;
    bool equals(const Object& other) const override;
    void release() override { dict_ = Value(); }

private:
    Value dict_;
    Which which_;
};

// A Python generator or iterator: lazy, consumed once, always true, no len().
class GeneratorObject : public Object {
public:
    // next() returns the next item or nullopt at the end.
    using Next = std::function<std::optional<Value>(Runtime&)>;
    GeneratorObject(std::string type, Next next) : type_(std::move(type)), next_(std::move(next)) {}
    const char* type_name() const override { return type_.c_str(); }
    std::string repr() const override { return "<" + type_ + " object>"; }
    bool iterable() const override { return true; }
    std::vector<Value> iterate(Runtime& rt) override;
    std::optional<Value> pull(Runtime& rt);
    void release() override { next_ = nullptr; }

private:
    std::string type_;
    Next next_;
    bool done_ = false;
};
// A generator over the items of an already computed vector.
Value make_generator(std::string type, std::vector<Value> items);

// jinja2.runtime.LoopContext over materialised items (the body only sees the loop it is in).
class LoopObject : public Object {
public:
    // recurse renders the loop body again for a nested iterable ({% for ... recursive %}).
    using Recurse = std::function<Value(Runtime&, const Value& iterable, int depth)>;
    LoopObject(std::vector<Value> items, int depth0, Recurse recurse)
        : items_(std::move(items)), depth0_(depth0), recurse_(std::move(recurse)) {}
    const char* type_name() const override { return "LoopContext"; }
    std::string repr() const override;
    std::optional<Value> attribute(Runtime& rt, const std::string& name) override;
    bool callable() const override { return true; }
    Value call(Runtime& rt, CallArgs& args) override;
    std::optional<int64_t> length() const override { return static_cast<int64_t>(items_.size()); }
    void advance() { ++index0_; }
    void release() override {
        items_.clear();
        recurse_ = nullptr;
        last_changed_.reset();
    }

private:
    std::vector<Value> items_;
    int64_t index0_ = -1;
    int depth0_;
    Recurse recurse_;
    std::optional<std::vector<Value>> last_changed_;
};

// jinja2.utils.Cycler and Joiner (the cycler() and joiner() globals).
class CyclerObject : public Object {
public:
    explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
    const char* type_name() const override { return "Cycler"; }
    std::optional<Value> attribute(Runtime& rt, const std::string& name) override;
    void release() override { items_.clear(); }

private:
    std::vector<Value> items_;
    size_t pos_ = 0;
};

class JoinerObject : public Object {
public:
    explicit JoinerObject(Value sep) : sep_(std::move(sep)) {}
    const char* type_name() const override { return "Joiner"; }
    bool callable() const override { return true; }
    Value call(Runtime& rt, CallArgs& args) override;
    std::optional<Value> attribute(Runtime& rt, const std::string& name) override;

private:
    Value sep_;
    bool used_ = false;
};

// Python-style argument binding for built-ins: positional then keyword, defaults for the rest.
// `names` are the parameters after the receiver; `required` of them have no default. Raises
// TypeError like Python for missing, surplus or unknown arguments.
std::vector<std::optional<Value>> bind_args(const std::string& fn, CallArgs& args, const std::vector<std::string>& names,
                                            size_t required);

}  // namespace ql::jinja
