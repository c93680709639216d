// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_interpreter.h"

#include <algorithm>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_filters.h"
#include "engine/text/jinja_is_tests.h"
#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_operators.h"

namespace ql::jinja {

namespace {

// Nested eval/exec calls allowed at once: bounds the C++ stack whatever the template does.
constexpr int kJinjaMaxNest = 3000;

// jinja2.runtime.Macro: a {% macro %} or the `caller` of a {% call %} block, closed over the
// scope it was defined in.
class MacroObject : public Object {
public:
    MacroObject(const Stmt* stmt, std::string name, std::shared_ptr<Scope> closure)
        : stmt_(stmt), name_(std::move(name)), closure_(std::move(closure)) {}
    const char* type_name() const override { return "Macro"; }
    std::string repr() const override { return "<Macro '" + name_ + "'>"; }
    bool callable() const override { return true; }
    Value call(Runtime& rt, CallArgs& args) override {
        if (!closure_) throw Error("RuntimeError", "macro '" + name_ + "' called after the rendering ended");
        return static_cast<Interpreter&>(rt).call_macro(*stmt_, name_, closure_, args);
    }
    std::optional<Value> attribute(Runtime&, const std::string& name) override {
        if (name == "name") return Value::string(name_);
        if (name == "arguments") {
            std::vector<Value> a;
            for (const auto& p : stmt_->params) a.push_back(Value::string(p));
            return Value::tuple(std::move(a));
        }
        if (name == "catch_kwargs") return Value::boolean(stmt_->catch_kwargs);
        if (name == "catch_varargs") return Value::boolean(stmt_->catch_varargs);
        if (name == "caller") return Value::boolean(stmt_->caller);
        return std::nullopt;
    }
    void release() override { closure_.reset(); }

private:
    const Stmt* stmt_;
    std::string name_;
    std::shared_ptr<Scope> closure_;
};

struct JinjaNest {
    explicit JinjaNest(int& n) : n_(n) {
        if (++n_ > kJinjaMaxNest) {
            --n_;
            throw Error("LimitError", "template recursion deeper than " + std::to_string(kJinjaMaxNest) + " nested evaluations");
        }
    }
    ~JinjaNest() { --n_; }
    JinjaNest(const JinjaNest&) = delete;
    JinjaNest& operator=(const JinjaNest&) = delete;
    int& n_;
};

}  // namespace

const Value* Scope::find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get())
        for (const auto& kv : s->vars)
            if (kv.first == name) return &kv.second;
    return nullptr;
}

void Scope::set(const std::string& name, Value v) {
    for (auto& kv : vars) {
        if (kv.first == name) {
            kv.second = std::move(v);
            return;
        }
    }
    vars.emplace_back(name, std::move(v));
}

Interpreter::~Interpreter() {
    // Break the cycles closures and namespaces can form (a macro stored in the scope it closes
    // over, a namespace holding itself) before the last references go.
    for (auto& o : tracked_) o->release();
}

void Interpreter::charge(int64_t steps) {
    steps_ += steps;
    if (steps_ > limits_.max_steps)
        throw Error("LimitError", "more than " + std::to_string(limits_.max_steps) + " evaluation steps (max_steps)");
}

void Interpreter::emit(const std::string& text) {
    if (out_->size() + text.size() > limits_.max_output_bytes)
        throw Error("LimitError", "output larger than " + std::to_string(limits_.max_output_bytes) + " bytes (max_output_bytes)");
    *out_ += text;
}

void Interpreter::note_line(int line) {
    if (!error_line_) error_line_ = line;
}

std::string Interpreter::render(const Body& body, const std::unordered_map<std::string, Value>& context) {
    context_ = &context;
    steps_ = 0;
    depth_ = 0;
    error_line_ = 0;
    std::string out;
    out_ = &out;
    ObjectTracking tracking(*this);
    auto root = std::make_shared<Scope>();
    exec_body(body, root);
    out_ = nullptr;
    return out;
}

Value Interpreter::lookup(const std::string& name, const Scope& scope) const {
    if (const Value* v = scope.find(name)) return *v;
    const auto it = context_->find(name);
    if (it != context_->end()) return it->second;
    return Value::undefined("'" + name + "' is undefined");
}

Value Interpreter::call(const Value& callee, CallArgs args) {
    if (callee.is_undefined()) raise_undefined(callee);
    if (callee.kind == Kind::Object && callee.obj->callable()) return callee.obj->call(*this, args);
    throw Error("TypeError", "'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::call_filter(const std::string& name, const Value& value, CallArgs args) {
    return apply_filter(*this, name, value, args);
}

bool Interpreter::call_test(const std::string& name, const Value& value, CallArgs args) {
    return apply_test(*this, name, value, args);
}

Value Interpreter::call_macro(const Stmt& m, const std::string& name, const std::shared_ptr<Scope>& closure, CallArgs& call) {
    if (depth_ >= limits_.max_depth)
        throw Error("LimitError", "macro calls nested deeper than " + std::to_string(limits_.max_depth) + " (max_depth)");
    // jinja2.runtime.Macro.__call__
    const size_t n = m.params.size();
    std::vector<std::optional<Value>> arguments;
    for (size_t k = 0; k < std::min(n, call.args.size()); ++k) arguments.emplace_back(call.args[k]);
    auto kwargs = call.kwargs;
    auto pop_kw = [&](const std::string& key) -> std::optional<Value> {
        for (auto it = kwargs.begin(); it != kwargs.end(); ++it)
            if (it->first == key) {
                Value v = it->second;
                kwargs.erase(it);
                return v;
            }
        return std::nullopt;
    };
    bool found_caller = false;
    if (arguments.size() != n) {
        for (size_t k = arguments.size(); k < n; ++k) {
            arguments.push_back(pop_kw(m.params[k]));
            if (m.params[k] == "caller") found_caller = true;
        }
    } else {
        found_caller = std::find(m.params.begin(), m.params.end(), "caller") != m.params.end();
    }
    auto scope = std::make_shared<Scope>();
    scope->parent = closure;
    if (m.caller && !found_caller) {
        std::optional<Value> caller = pop_kw("caller");
        scope->set("caller", caller && !caller->is_none() ? *caller : Value::undefined("No caller defined"));
    }
    if (m.catch_kwargs) {
        std::vector<std::pair<Value, Value>> items;
        for (auto& kw : kwargs) items.emplace_back(Value::string(kw.first), kw.second);
        scope->set("kwargs", Value::dict(std::move(items), true));
    } else if (!kwargs.empty()) {
        for (const auto& kw : kwargs)
            if (kw.first == "caller")
                throw Error("TypeError", "macro '" + name + "' was invoked with two values for the special caller argument. This is most likely a bug.");
        throw Error("TypeError", "macro '" + name + "' takes no keyword argument '" + kwargs[0].first + "'");
    }
    if (m.catch_varargs) {
        std::vector<Value> rest;
        for (size_t k = n; k < call.args.size(); ++k) rest.push_back(call.args[k]);
        scope->set("varargs", Value::tuple(std::move(rest)));
    } else if (call.args.size() > n) {
        throw Error("TypeError", "macro '" + name + "' takes not more than " + std::to_string(n) + " argument(s)");
    }
    ++depth_;
    struct DepthGuard {
        int& d;
        ~DepthGuard() { --d; }
    } guard{depth_};
    // compiler.macro_body: missing parameters take their default, evaluated in the macro's frame.
    const size_t first_default = n - m.defaults.size();
    for (size_t k = 0; k < n; ++k) {
        if (arguments[k]) {
            scope->set(m.params[k], *arguments[k]);
        } else if (k >= first_default) {
            scope->set(m.params[k], eval(*m.defaults[k - first_default], scope));
        } else {
            scope->set(m.params[k], Value::undefined("parameter '" + m.params[k] + "' was not provided"));
        }
    }
    auto result = capture(m.body, scope);
    return make_string(*this, std::move(result.first));
}

std::pair<std::string, Interpreter::Flow> Interpreter::capture(const Body& body, const ScopePtr& scope) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    Flow f;
    try {
        f = exec_body(body, scope);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return {std::move(buffer), f};
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
    for (const auto& s : body) {
        const Flow f = exec(*s, scope);
        if (f != Flow::Next) return f;
    }
    return Flow::Next;
}

Value Interpreter::apply_block_filter(const Expr& filter, const std::string& text, const ScopePtr& scope) {
    const Value input = Value::string(text);
    const Value* saved = block_input_;
    block_input_ = &input;
    try {
        Value v = eval(filter, scope);
        block_input_ = saved;
        return v;
    } catch (...) {
        block_input_ = saved;
        throw;
    }
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
    JinjaNest nest(nest_);
    charge(1);
    try {
        switch (s.type) {
        case StmtType::Output:
            for (const auto& e : s.exprs) {
                if (e->data)
                    emit(e->constant.str());
                else
                    emit(to_str(eval(*e, scope)));
            }
            return Flow::Next;
        case StmtType::If:
            for (const auto& br : s.branches)
                if (truthy(eval(*br.first, scope))) return exec_body(br.second, scope);
            return exec_body(s.else_body, scope);
        case StmtType::For: {
            const Value iterable = eval(*s.value, scope);
            return exec_for(s, scope, iterable, 0);
        }
        case StmtType::Set: {
            const Value v = eval(*s.value, scope);
            assign(*s.target, v, scope);
            return Flow::Next;
        }
        case StmtType::SetBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            auto r = capture(s.body, inner);
            if (r.second != Flow::Next) return r.second;
            const Value v = s.filter ? apply_block_filter(*s.filter, r.first, inner) : Value::string(std::move(r.first));
            assign(*s.target, v, scope);
            return Flow::Next;
        }
        case StmtType::Macro: {
            auto m = std::make_shared<MacroObject>(&s, s.name, scope);
            scope->set(s.name, Value::object(m));
            return Flow::Next;
        }
        case StmtType::CallBlock: {
            auto caller = std::make_shared<MacroObject>(&s, "caller", scope);
            const Expr& c = *s.value;
            const Value callee = eval(*c.a, scope);
            CallArgs args = eval_args(c, scope);
            args.kwargs.emplace_back("caller", Value::object(caller));
            emit(to_str(call(callee, std::move(args))));
            return Flow::Next;
        }
        case StmtType::FilterBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            auto r = capture(s.body, inner);
            if (r.second != Flow::Next) return r.second;
            emit(to_str(apply_block_filter(*s.filter, r.first, inner)));
            return Flow::Next;
        }
        case StmtType::With: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            std::vector<Value> values;
            for (const auto& e : s.exprs) values.push_back(eval(*e, scope));
            for (size_t k = 0; k < s.targets.size(); ++k) bind(*s.targets[k], values[k], *inner);
            return exec_body(s.body, inner);
        }
        case StmtType::Generation: {
            // AssistantTracker._generation_support: rv = caller(), the body in its own frame.
            if (depth_ >= limits_.max_depth)
                throw Error("LimitError", "calls nested deeper than " + std::to_string(limits_.max_depth) + " (max_depth)");
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            ++depth_;
            std::pair<std::string, Flow> r;
            try {
                r = capture(s.body, inner);
            } catch (...) {
                --depth_;
                throw;
            }
            --depth_;
            emit(r.first);
            return Flow::Next;
        }
        case StmtType::Break: return Flow::Break;
        case StmtType::Continue: return Flow::Continue;
        }
    } catch (const Error&) {
        note_line(s.line);
        throw;
    }
    return Flow::Next;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth) {
    std::vector<Value> items = iterate(*this, iterable);
    if (s.test) {
        // The loop filter runs in its own frame with the target bound (`loop` is the outer one).
        std::vector<Value> kept;
        for (auto& item : items) {
            charge(1);
            auto ts = std::make_shared<Scope>();
            ts->parent = scope;
            bind(*s.target, item, *ts);
            if (truthy(eval(*s.test, ts))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    LoopObject::Recurse recurse;
    if (s.recursive) {
        const Stmt* stmt = &s;
        recurse = [this, stmt, scope](Runtime&, const Value& nested, int d) -> Value {
            if (depth_ >= limits_.max_depth)
                throw Error("LimitError", "recursive loop deeper than " + std::to_string(limits_.max_depth) + " (max_depth)");
            std::string buffer;
            std::string* saved = out_;
            out_ = &buffer;
            ++depth_;
            try {
                exec_for(*stmt, scope, nested, d);
            } catch (...) {
                out_ = saved;
                --depth_;
                throw;
            }
            out_ = saved;
            --depth_;
            return make_string(*this, std::move(buffer));
        };
    }
    auto loop = std::make_shared<LoopObject>(items, depth, std::move(recurse));
    const Value loop_value = Value::object(loop);
    // compiler.visit_For: the else branch runs unless an iteration ran to its end.
    bool run_else = true;
    for (const Value& item : items) {
        charge(1);
        loop->advance();
        auto is = std::make_shared<Scope>();
        is->parent = scope;
        bind(*s.target, item, *is);
        is->set("loop", loop_value);
        const Flow f = exec_body(s.body, is);
        if (f == Flow::Break) break;
        if (f == Flow::Continue) continue;
        run_else = false;
    }
    if (run_else && !s.else_body.empty()) {
        auto es = std::make_shared<Scope>();
        es->parent = scope;
        return exec_body(s.else_body, es);
    }
    return Flow::Next;
}

void Interpreter::bind(const Expr& target, const Value& value, Scope& scope) {
    if (target.type == ExprType::Name) {
        scope.set(target.name, value);
        return;
    }
    if (target.type == ExprType::Tuple) {
        if (!is_iterable(value) || value.is_undefined()) {
            if (value.is_undefined()) raise_undefined(value);
            throw Error("TypeError", "cannot unpack non-iterable " + type_name(value) + " object");
        }
        const std::vector<Value> items = iterate(*this, value);
        const size_t n = target.items.size();
        if (items.size() < n)
            throw Error("ValueError", "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                                          std::to_string(items.size()) + ")");
        if (items.size() > n) throw Error("ValueError", "too many values to unpack (expected " + std::to_string(n) + ")");
        for (size_t k = 0; k < n; ++k) bind(*target.items[k], items[k], scope);
        return;
    }
    throw Error("TemplateRuntimeError", "cannot assign to this target");
}

void Interpreter::assign(const Expr& target, const Value& value, const ScopePtr& scope) {
    if (target.type == ExprType::NSRef) {
        const Value ns = lookup(target.name, *scope);
        auto* n = ns.kind == Kind::Object ? dynamic_cast<NamespaceObject*>(ns.obj.get()) : nullptr;
        if (!n) throw Error("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
        n->set(target.attr, value);
        return;
    }
    if (target.type == ExprType::Tuple) {
        const std::vector<Value> items = iterate(*this, value);
        const size_t n = target.items.size();
        if (items.size() != n)
            throw Error("ValueError", items.size() < n ? "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                                                             std::to_string(items.size()) + ")"
                                                       : "too many values to unpack (expected " + std::to_string(n) + ")");
        for (size_t k = 0; k < n; ++k) assign(*target.items[k], items[k], scope);
        return;
    }
    bind(target, value, *scope);
}

CallArgs Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
    CallArgs a;
    for (const auto& x : e.items) a.args.push_back(eval(*x, scope));
    for (const auto& kw : e.kwargs) a.kwargs.emplace_back(kw.name, eval(*kw.value, scope));
    if (e.dyn_args) {
        for (Value& v : iterate(*this, eval(*e.dyn_args, scope))) a.args.push_back(std::move(v));
    }
    if (e.dyn_kwargs) {
        const Value d = eval(*e.dyn_kwargs, scope);
        if (d.kind != Kind::Dict) throw Error("TypeError", "argument after ** must be a mapping, not " + type_name(d));
        for (const auto& kv : d.pairs()) {
            if (kv.first.kind != Kind::String) throw Error("TypeError", "keywords must be strings");
            for (const auto& existing : a.kwargs)
                if (existing.first == kv.first.str())
                    throw Error("TypeError", "got multiple values for keyword argument '" + existing.first + "'");
            a.kwargs.emplace_back(kv.first.str(), kv.second);
        }
    }
    return a;
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
    JinjaNest nest(nest_);
    try {
        return eval_inner(e, scope);
    } catch (const Error&) {
        note_line(e.line);
        throw;
    }
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
    charge(1);
    switch (e.type) {
    case ExprType::Const: return e.constant;
    case ExprType::Name: return lookup(e.name, *scope);
    case ExprType::NSRef: throw Error("TemplateRuntimeError", "namespace reference used as a value");
    case ExprType::List:
    case ExprType::Tuple: {
        std::vector<Value> items;
        items.reserve(e.items.size());
        for (const auto& x : e.items) items.push_back(eval(*x, scope));
        return make_list(*this, std::move(items), e.type == ExprType::Tuple);
    }
    case ExprType::Dict: {
        std::vector<std::pair<Value, Value>> items;
        for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
            Value key = eval(*e.items[k], scope);
            require_hashable(key);
            items.emplace_back(std::move(key), eval(*e.items[k + 1], scope));
        }
        charge(static_cast<int64_t>(items.size() * items.size()));
        return Value::dict(std::move(items));
    }
    case ExprType::Getattr: return get_attribute(*this, eval(*e.a, scope), e.name);
    case ExprType::Getitem: {
        const Value obj = eval(*e.a, scope);
        if (e.b->type == ExprType::Slice) {
            const Expr& sl = *e.b;
            std::optional<Value> start, stop, step;
            if (sl.a) start = eval(*sl.a, scope);
            if (sl.b) stop = eval(*sl.b, scope);
            if (sl.c) step = eval(*sl.c, scope);
            return get_slice(*this, obj, start ? &*start : nullptr, stop ? &*stop : nullptr, step ? &*step : nullptr);
        }
        return get_item(*this, obj, eval(*e.b, scope));
    }
    case ExprType::Slice: throw Error("TypeError", "a slice is only valid inside []");
    case ExprType::Call: {
        const Value callee = eval(*e.a, scope);
        return call(callee, eval_args(e, scope));
    }
    case ExprType::Filter: {
        Value v;
        if (e.a)
            v = eval(*e.a, scope);
        else if (block_input_)
            v = *block_input_;
        CallArgs args = eval_args(e, scope);
        if (e.unknown) throw Error("TemplateRuntimeError", "No filter named '" + e.name + "' found.");
        return apply_filter(*this, e.name, v, args);
    }
    case ExprType::Test: {
        const Value v = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        if (e.unknown) throw Error("TemplateRuntimeError", "No test named '" + e.name + "' found.");
        return Value::boolean(apply_test(*this, e.name, v, args));
    }
    case ExprType::Neg:
    case ExprType::Pos: return unary_operation(e.type, eval(*e.a, scope));
    case ExprType::Not: return Value::boolean(!truthy(eval(*e.a, scope)));
    case ExprType::Add:
    case ExprType::Sub:
    case ExprType::Mul:
    case ExprType::Div:
    case ExprType::FloorDiv:
    case ExprType::Mod:
    case ExprType::Pow: {
        const Value a = eval(*e.a, scope);
        const Value b = eval(*e.b, scope);
        return binary_operation(*this, e.type, a, b);
    }
    case ExprType::And: {
        Value a = eval(*e.a, scope);
        if (!truthy(a)) return a;
        return eval(*e.b, scope);
    }
    case ExprType::Or: {
        Value a = eval(*e.a, scope);
        if (truthy(a)) return a;
        return eval(*e.b, scope);
    }
    case ExprType::Concat: {
        // runtime.str_join: "".join(map(str, seq))
        std::string out;
        for (const auto& x : e.items) {
            out += to_str(eval(*x, scope));
            if (out.size() > limits_.max_output_bytes)
                throw Error("LimitError", "a string larger than " + std::to_string(limits_.max_output_bytes) + " bytes (max_output_bytes)");
        }
        return make_string(*this, std::move(out));
    }
    case ExprType::Compare: {
        // Python's chained comparison: a < b < c is a < b and b < c, b evaluated once.
        Value left = eval(*e.a, scope);
        for (size_t k = 0; k < e.ops.size(); ++k) {
            Value right = eval(*e.items[k], scope);
            if (!compare_operation(*this, e.ops[k], left, right)) return Value::boolean(false);
            left = std::move(right);
        }
        return Value::boolean(true);
    }
    case ExprType::CondExpr: {
        if (truthy(eval(*e.a, scope))) return eval(*e.b, scope);
        if (e.c) return eval(*e.c, scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    }
    return Value();
}

}  // namespace ql::jinja
