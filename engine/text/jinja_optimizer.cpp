// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_optimizer.h"

#include <optional>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_filters.h"
#include "engine/text/jinja_is_tests.h"
#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_operators.h"

namespace ql::jinja {

namespace {

// compiler.has_safe_repr: values the compiler can write back into source as literals.
bool jinja_safe_repr(const Value& v) {
    switch (v.kind) {
    case Kind::None:
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
    case Kind::String: return true;
    case Kind::List:
    case Kind::Tuple:
        if (!v.seq->fields.empty()) return false;  // a namedtuple is not exactly a tuple
        for (const Value& x : v.items())
            if (!jinja_safe_repr(x)) return false;
        return true;
    case Kind::Dict:
        for (const auto& kv : v.pairs())
            if (!jinja_safe_repr(kv.first) || !jinja_safe_repr(kv.second)) return false;
        return true;
    case Kind::Object: return dynamic_cast<const RangeObject*>(v.obj.get()) != nullptr;
    default: return false;
    }
}

// Filters marked @pass_context in jinja2/filters.py: as_const refuses them.
bool jinja_needs_context(const std::string& filter) {
    return filter == "map" || filter == "select" || filter == "reject" || filter == "selectattr" ||
           filter == "rejectattr" || filter == "random";
}

class JinjaConstEvaluator {
public:
    explicit JinjaConstEvaluator(const Limits& limits) : limits_(limits) {}

    // Node.as_const; nullopt where it raises Impossible (or any error, which as_const turns into
    // Impossible).
    std::optional<Value> as_const(const Expr& e) {
        Interpreter rt(limits_);
        try {
            return eval(rt, e);
        } catch (const Error&) {
            return std::nullopt;
        }
    }

private:
    struct Impossible {};

    Value eval(Interpreter& rt, const Expr& e) {
        rt.charge(1);
        switch (e.type) {
        case ExprType::Const: return e.constant;
        case ExprType::List:
        case ExprType::Tuple: {
            std::vector<Value> items;
            for (const auto& x : e.items) items.push_back(eval(rt, *x));
            return make_list(rt, std::move(items), e.type == ExprType::Tuple);
        }
        case ExprType::Dict: {
            std::vector<std::pair<Value, Value>> items;
            for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
                Value key = eval(rt, *e.items[k]);
                require_hashable(key);
                items.emplace_back(std::move(key), eval(rt, *e.items[k + 1]));
            }
            return Value::dict(std::move(items));
        }
        case ExprType::Getattr: return get_attribute(rt, eval(rt, *e.a), e.name);
        case ExprType::Getitem: {
            const Value obj = eval(rt, *e.a);
            if (e.b->type != ExprType::Slice) return get_item(rt, obj, eval(rt, *e.b));
            // environment.getitem(obj, slice(...)): sequences slice, anything else is Undefined.
            const Expr& sl = *e.b;
            std::optional<Value> start, stop, step;
            if (sl.a) start = eval(rt, *sl.a);
            if (sl.b) stop = eval(rt, *sl.b);
            if (sl.c) step = eval(rt, *sl.c);
            const bool sliceable = obj.kind == Kind::String || obj.kind == Kind::List || obj.kind == Kind::Tuple ||
                                   (obj.kind == Kind::Object && dynamic_cast<const RangeObject*>(obj.obj.get()));
            if (obj.is_undefined()) raise_undefined(obj);
            if (!sliceable) return Value::undefined(type_name(obj) + " object has no element slice");
            return get_slice(rt, obj, start ? &*start : nullptr, stop ? &*stop : nullptr, step ? &*step : nullptr);
        }
        case ExprType::Filter: {
            if (!e.a || e.unknown || jinja_needs_context(e.name)) throw Impossible();
            const Value v = eval(rt, *e.a);
            CallArgs args = const_args(rt, e);
            return apply_filter(rt, e.name, v, args);
        }
        case ExprType::Test: {
            if (e.unknown) throw Impossible();
            const Value v = eval(rt, *e.a);
            CallArgs args = const_args(rt, e);
            return Value::boolean(apply_test(rt, e.name, v, args));
        }
        case ExprType::Neg:
        case ExprType::Pos: return unary_operation(e.type, eval(rt, *e.a));
        case ExprType::Not: return Value::boolean(!truthy(eval(rt, *e.a)));
        case ExprType::Add:
        case ExprType::Sub:
        case ExprType::Mul:
        case ExprType::Div:
        case ExprType::FloorDiv:
        case ExprType::Mod:
        case ExprType::Pow: {
            const Value a = eval(rt, *e.a);
            const Value b = eval(rt, *e.b);
            return binary_operation(rt, e.type, a, b);
        }
        case ExprType::And: {
            Value a = eval(rt, *e.a);
            return truthy(a) ? eval(rt, *e.b) : a;
        }
        case ExprType::Or: {
            Value a = eval(rt, *e.a);
            return truthy(a) ? a : eval(rt, *e.b);
        }
        case ExprType::Concat: {
            std::string out;
            for (const auto& x : e.items) out += to_str(eval(rt, *x));
            return make_string(rt, std::move(out));
        }
        case ExprType::Compare: {
            Value left = eval(rt, *e.a);
            for (size_t k = 0; k < e.ops.size(); ++k) {
                Value right = eval(rt, *e.items[k]);
                if (!compare_operation(rt, e.ops[k], left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case ExprType::CondExpr:
            if (truthy(eval(rt, *e.a))) return eval(rt, *e.b);
            if (!e.c) throw Impossible();
            return eval(rt, *e.c);
        default: throw Impossible();  // Name, NSRef, Call, a bare Slice
        }
    }

    CallArgs const_args(Interpreter& rt, const Expr& e) {
        CallArgs a;
        for (const auto& x : e.items) a.args.push_back(eval(rt, *x));
        for (const auto& kw : e.kwargs) a.kwargs.emplace_back(kw.name, eval(rt, *kw.value));
        if (e.dyn_args)
            for (Value& v : iterate(rt, eval(rt, *e.dyn_args))) a.args.push_back(std::move(v));
        if (e.dyn_kwargs) {
            const Value d = eval(rt, *e.dyn_kwargs);
            if (d.kind != Kind::Dict) throw Impossible();
            for (const auto& kv : d.pairs()) {
                if (kv.first.kind != Kind::String) throw Impossible();
                a.kwargs.emplace_back(kv.first.str(), kv.second);
            }
        }
        return a;
    }

    const Limits& limits_;

public:
    // as_const with Impossible mapped to nullopt too.
    std::optional<Value> try_const(const Expr& e) {
        try {
            return as_const(e);
        } catch (const Impossible&) {
            return std::nullopt;
        }
    }
};

class JinjaFolder {
public:
    explicit JinjaFolder(const Limits& limits) : eval_(limits) {}

    void body(Body& b) {
        for (auto& s : b) statement(*s);
    }

private:
    void statement(Stmt& s) {
        for (auto& e : s.exprs) {
            if (e->data) continue;
            if (s.type == StmtType::Output) {
                // compiler.visit_Output: a child whose as_const succeeds is written as str(value),
                // whatever the value (Undefined prints "").
                if (auto v = eval_.try_const(*e)) {
                    auto c = std::make_unique<Expr>();
                    c->type = ExprType::Const;
                    c->line = e->line;
                    c->column = e->column;
                    c->constant = Value::string(to_str(*v));
                    c->data = true;
                    e = std::move(c);
                    continue;
                }
            }
            fold(e);
        }
        for (auto* p : {&s.target, &s.value, &s.test, &s.filter})
            if (*p) fold(*p);
        for (auto& t : s.targets) fold(t);
        for (auto& d : s.defaults) fold(d);
        for (auto& br : s.branches) {
            fold(br.first);
            body(br.second);
        }
        body(s.body);
        body(s.else_body);
    }

    // optimizer.Optimizer.generic_visit: children first, then the node itself when its value can
    // be written back as a literal.
    void fold(ExprPtr& e) {
        if (!e || e->type == ExprType::Const || e->type == ExprType::Name || e->type == ExprType::NSRef) return;
        for (ExprPtr* c : {&e->a, &e->b, &e->c, &e->dyn_args, &e->dyn_kwargs}) fold(*c);
        for (auto& x : e->items) fold(x);
        for (auto& k : e->kwargs) fold(k.value);
        if (e->type == ExprType::Slice) return;
        if (auto v = eval_.try_const(*e); v && jinja_safe_repr(*v)) {
            auto c = std::make_unique<Expr>();
            c->type = ExprType::Const;
            c->line = e->line;
            c->column = e->column;
            c->constant = std::move(*v);
            e = std::move(c);
        }
    }

    JinjaConstEvaluator eval_;
};

}  // namespace

void fold_constants(Body& body, const Limits& limits) { JinjaFolder(limits).body(body); }

}  // namespace ql::jinja
