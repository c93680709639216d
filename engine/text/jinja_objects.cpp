// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_objects.h"

#include <algorithm>

namespace ql::jinja {

std::string NamespaceObject::repr() const {
    // jinja2.utils.Namespace.__repr__: f"<Namespace {self.__attrs!r}>"; a namespace reached again
    // while it is being printed shows its attributes as {...} (dict repr's Py_ReprEnter guard).
    thread_local std::vector<const NamespaceObject*> in_progress;
    if (std::find(in_progress.begin(), in_progress.end(), this) != in_progress.end()) return "<Namespace {...}>";
    if (in_progress.size() >= static_cast<size_t>(kMaxValueDepth))
        throw Error("RecursionError", "namespaces nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    in_progress.push_back(this);
    struct Pop {
        ~Pop() { in_progress.pop_back(); }
    } pop;
    std::vector<std::pair<Value, Value>> items;
    for (const auto& kv : attrs_) items.emplace_back(Value::string(kv.first), kv.second);
    return "<Namespace " + jinja::repr(Value::dict(std::move(items), true), 1) + ">";
}

std::optional<Value> NamespaceObject::attribute(Runtime&, const std::string& name) {
    for (const auto& kv : attrs_)
        if (kv.first == name) return kv.second;
    return std::nullopt;
}

void NamespaceObject::set(const std::string& name, Value value) {
    // transformers TemplateNamespace._check_name.
    if (!name.empty() && name[0] == '_')
        throw Error("SecurityError", "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                                         name + "'. Please rename the attribute.");
    for (auto& kv : attrs_) {
        if (kv.first == name) {
            kv.second = std::move(value);
            return;
        }
    }
    attrs_.emplace_back(name, std::move(value));
}

std::string BoundMethodObject::repr() const {
    return "<built-in method " + name_ + " of " + jinja::type_name(self_) + " object>";
}

Value BoundMethodObject::call(Runtime& rt, CallArgs& args) {
    if (!fn_) throw Error("RuntimeError", name_ + "() called after the rendering ended");
    // String methods scan their receiver and arguments: that is work too.
    size_t bytes = self_.kind == Kind::String ? self_.str().size() : 0;
    for (const Value& a : args.args)
        if (a.kind == Kind::String) bytes += a.str().size();
    rt.charge(static_cast<int64_t>(bytes / 64));
    return fn_(rt, self_, args);
}

std::string RangeObject::repr() const {
    std::string out = "range(" + std::to_string(start_) + ", " + std::to_string(stop_);
    if (step_ != 1) out += ", " + std::to_string(step_);
    return out + ")";
}

int64_t RangeObject::size() const {
    if (step_ > 0 && start_ < stop_) return (stop_ - start_ - 1) / step_ + 1;
    if (step_ < 0 && start_ > stop_) return (start_ - stop_ - 1) / (-step_) + 1;
    return 0;
}

std::vector<Value> RangeObject::iterate(Runtime& rt) {
    const int64_t n = size();
    rt.charge(n);
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) out.push_back(Value::integer(at(k)));
    return out;
}

std::optional<Value> RangeObject::subscript(Runtime&, const Value& key) {
    if (!key.is_int_like())
        throw Error("TypeError", "range indices must be integers or slices, not " + jinja::type_name(key));
    int64_t k = key.as_int();
    const int64_t n = size();
    if (k < 0) k += n;
    if (k < 0 || k >= n) throw Error("IndexError", "range object index out of range");
    return Value::integer(at(k));
}

bool RangeObject::equals(const Object& other) const {
    const auto* r = dynamic_cast<const RangeObject*>(&other);
    if (!r) return false;
    const int64_t n = size();
    if (n != r->size()) return false;
    if (n == 0) return true;
    if (start_ != r->start_) return false;
    return n == 1 || step_ == r->step_;
}

std::optional<Value> RangeObject::attribute(Runtime&, const std::string& name) {
    if (name == "start") return Value::integer(start_);
    if (name == "stop") return Value::integer(stop_);
    if (name == "step") return Value::integer(step_);
    return std::nullopt;
}

const char* DictViewObject::type_name() const {
    switch (which_) {
    case Which::Keys: return "dict_keys";
    case Which::Values: return "dict_values";
    case Which::Items: return "dict_items";
    }
    return "dict_view";
}

std::vector<Value> DictViewObject::elements() const {
    std::vector<Value> out;
    out.reserve(dict_.pairs().size());
    for (const auto& kv : dict_.pairs()) {
        if (which_ == Which::Keys)
            out.push_back(kv.first);
        else if (which_ == Which::Values)
            out.push_back(kv.second);
        else
            out.push_back(Value::tuple({kv.first, kv.second}));
    }
    return out;
}

std::string DictViewObject::repr() const {
    return std::string(type_name()) + "(" + jinja::repr(Value::list(elements()), 1) + ")";
}

std::vector<Value> DictViewObject::iterate(Runtime& rt) {
    rt.charge(static_cast<int64_t>(dict_.pairs().size()));
    return elements();
}

bool DictViewObject::equals(const Object& other) const {
    const auto* v = dynamic_cast<const DictViewObject*>(&other);
    if (!v || v->which_ != which_) return false;
    if (which_ == Which::Values) return this == &other;  // dict_values compare by identity
    // keys and items views compare as sets.
    const auto a = elements();
    const auto b = v->elements();
    if (a.size() != b.size()) return false;
    for (const Value& x : a) {
        bool found = false;
        for (const Value& y : b)
            if (jinja::equals(x, y)) found = true;
        if (!found) return false;
    }
    return true;
}

std::optional<Value> GeneratorObject::pull(Runtime& rt) {
    if (done_ || !next_) return std::nullopt;
    // A generator over a generator over ... pulls recursively; Python stops such chains at its
    // recursion limit.
    thread_local int depth = 0;
    if (depth >= kMaxValueDepth)
        throw Error("RecursionError", "generators nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    ++depth;
    struct Leave {
        ~Leave() { --depth; }
    } leave;
    std::optional<Value> v = next_(rt);
    if (!v) {
        done_ = true;
        next_ = nullptr;
    }
    return v;
}

std::vector<Value> GeneratorObject::iterate(Runtime& rt) {
    std::vector<Value> out;
    while (auto v = pull(rt)) {
        rt.charge(1);
        out.push_back(std::move(*v));
    }
    return out;
}

Value make_generator(std::string type, std::vector<Value> items) {
    auto data = std::make_shared<std::vector<Value>>(std::move(items));
    auto pos = std::make_shared<size_t>(0);
    return Value::object(std::make_shared<GeneratorObject>(std::move(type), [data, pos](Runtime&) -> std::optional<Value> {
        if (*pos >= data->size()) return std::nullopt;
        return (*data)[(*pos)++];
    }));
}

std::string LoopObject::repr() const {
    return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(items_.size()) + ">";
}

std::optional<Value> LoopObject::attribute(Runtime& rt, const std::string& name) {
    const auto n = static_cast<int64_t>(items_.size());
    if (name == "index0") return Value::integer(index0_);
    if (name == "index") return Value::integer(index0_ + 1);
    if (name == "revindex") return Value::integer(n - index0_);
    if (name == "revindex0") return Value::integer(n - index0_ - 1);
    if (name == "first") return Value::boolean(index0_ == 0);
    if (name == "last") return Value::boolean(index0_ + 1 >= n);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(depth0_ + 1);
    if (name == "depth0") return Value::integer(depth0_);
    if (name == "previtem") {
        if (index0_ <= 0) return Value::undefined("there is no previous item");
        return items_[static_cast<size_t>(index0_ - 1)];
    }
    if (name == "nextitem") {
        if (index0_ + 1 >= n) return Value::undefined("there is no next item");
        return items_[static_cast<size_t>(index0_ + 1)];
    }
    if (name == "cycle") {
        const int64_t index0 = index0_;
        return Value::object(std::make_shared<FunctionObject>(
            "cycle",
            [index0](Runtime&, CallArgs& a) -> Value {
                if (!a.kwargs.empty()) throw Error("TypeError", "cycle() got an unexpected keyword argument");
                if (a.args.empty()) throw Error("TypeError", "no items for cycling given");
                return a.args[static_cast<size_t>(index0 % static_cast<int64_t>(a.args.size()))];
            },
            "method"));
    }
    if (name == "changed") {
        auto self = std::static_pointer_cast<LoopObject>(shared_from_this());
        return Value::object(std::make_shared<FunctionObject>(
            "changed",
            [self](Runtime&, CallArgs& a) -> Value {
                if (!a.kwargs.empty()) throw Error("TypeError", "changed() got an unexpected keyword argument");
                bool same = self->last_changed_ && self->last_changed_->size() == a.args.size();
                for (size_t k = 0; same && k < a.args.size(); ++k) same = jinja::equals((*self->last_changed_)[k], a.args[k]);
                if (same) return Value::boolean(false);
                self->last_changed_ = a.args;
                return Value::boolean(true);
            },
            "method"));
    }
    (void)rt;
    return std::nullopt;
}

Value LoopObject::call(Runtime& rt, CallArgs& args) {
    if (!recurse_) throw Error("TypeError", "The loop must have the 'recursive' marker to be called recursively.");
    if (args.args.size() != 1 || !args.kwargs.empty()) throw Error("TypeError", "loop() takes exactly one argument");
    return recurse_(rt, args.args[0], depth0_ + 1);
}

std::optional<Value> CyclerObject::attribute(Runtime&, const std::string& name) {
    if (name == "items") return Value::tuple(items_);
    if (name == "pos") return Value::integer(static_cast<int64_t>(pos_));
    if (name == "current") return items_.empty() ? Value::none() : items_[pos_];
    if (name == "next" || name == "reset") {
        auto self = std::static_pointer_cast<CyclerObject>(shared_from_this());
        const bool next = name == "next";
        return Value::object(std::make_shared<FunctionObject>(
            name,
            [self, next](Runtime&, CallArgs&) -> Value {
                if (!next) {
                    self->pos_ = 0;
                    return Value::none();
                }
                Value rv = self->items_[self->pos_];
                self->pos_ = (self->pos_ + 1) % self->items_.size();
                return rv;
            },
            "method"));
    }
    return std::nullopt;
}

Value JoinerObject::call(Runtime&, CallArgs&) {
    if (!used_) {
        used_ = true;
        return Value::string("");
    }
    return sep_;
}

std::optional<Value> JoinerObject::attribute(Runtime&, const std::string& name) {
    if (name == "sep") return sep_;
    if (name == "used") return Value::boolean(used_);
    return std::nullopt;
}

std::vector<std::optional<Value>> bind_args(const std::string& fn, CallArgs& args, const std::vector<std::string>& names,
                                            size_t required) {
    std::vector<std::optional<Value>> out(names.size());
    if (args.args.size() > names.size())
        throw Error("TypeError", fn + "() takes at most " + std::to_string(names.size()) + " arguments (" +
                                     std::to_string(args.args.size()) + " given)");
    for (size_t k = 0; k < args.args.size(); ++k) out[k] = args.args[k];
    for (auto& kw : args.kwargs) {
        const auto it = std::find(names.begin(), names.end(), kw.first);
        if (it == names.end()) throw Error("TypeError", fn + "() got an unexpected keyword argument '" + kw.first + "'");
        auto& slot = out[static_cast<size_t>(it - names.begin())];
        if (slot) throw Error("TypeError", fn + "() got multiple values for argument '" + kw.first + "'");
        slot = kw.second;
    }
    for (size_t k = 0; k < required; ++k)
        if (!out[k]) throw Error("TypeError", fn + "() missing required argument '" + names[k] + "'");
    return out;
}

}  // namespace ql::jinja
