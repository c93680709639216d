// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_globals.h"

#include "engine/text/jinja_objects.h"

namespace ql::jinja {

namespace {

// jinja2.sandbox.MAX_RANGE.
constexpr int64_t kJinjaMaxRange = 100000;

int64_t jinja_range_arg(const Value& v) {
    if (!v.is_int_like()) throw Error("TypeError", "'" + type_name(v) + "' object cannot be interpreted as an integer");
    return v.as_int();
}

// dict(*args, **kwargs) as transformers' TemplateDict calls it.
Value jinja_make_dict(Runtime& rt, CallArgs& a) {
    if (a.args.size() > 1) throw Error("TypeError", "dict expected at most 1 argument, got " + std::to_string(a.args.size()));
    std::vector<std::pair<Value, Value>> items;
    if (!a.args.empty()) {
        const Value& src = a.args[0];
        if (src.kind == Kind::Dict) {
            items = src.pairs();
        } else {
            size_t k = 0;
            for (const Value& pair : iterate(rt, src)) {
                if (!is_iterable(pair) || pair.is_undefined())
                    throw Error("TypeError", "cannot convert dictionary update sequence element #" + std::to_string(k) +
                                                 " to a sequence");
                const std::vector<Value> kv = iterate(rt, pair);
                if (kv.size() != 2)
                    throw Error("ValueError", "dictionary update sequence element #" + std::to_string(k) + " has length " +
                                                  std::to_string(kv.size()) + "; 2 is required");
                require_hashable(kv[0]);
                items.emplace_back(kv[0], kv[1]);
                ++k;
            }
        }
    }
    for (auto& kw : a.kwargs) items.emplace_back(Value::string(kw.first), kw.second);
    rt.charge(static_cast<int64_t>(items.size() * items.size()));
    return Value::dict(std::move(items));
}

class JinjaDictGlobal : public FunctionObject {
public:
    JinjaDictGlobal() : FunctionObject("dict", jinja_make_dict, "TemplateDict") {}
    std::optional<Value> attribute(Runtime&, const std::string& name) override {
        if (name != "fromkeys") return std::nullopt;
        return Value::object(std::make_shared<FunctionObject>(
            "fromkeys",
            [](Runtime& rt, CallArgs& a) {
                auto args = bind_args("fromkeys", a, {"iterable", "value"}, 1);
                std::vector<std::pair<Value, Value>> items;
                for (const Value& k : jinja::iterate(rt, *args[0])) {
                    require_hashable(k);
                    items.emplace_back(k, args[1] ? *args[1] : Value::none());
                }
                return Value::dict(std::move(items));
            },
            "method"));
    }
};

}  // namespace

void add_jinja_globals(std::unordered_map<std::string, Value>& context,
                       std::function<std::string(const std::string&)> strftime) {
    auto fn = [&](const std::string& name, FunctionObject::Fn f) {
        context.emplace(name, Value::object(std::make_shared<FunctionObject>(name, std::move(f))));
    };
    fn("range", [](Runtime&, CallArgs& a) {
        // jinja2.sandbox.safe_range
        if (!a.kwargs.empty()) throw Error("TypeError", "range() takes no keyword arguments");
        if (a.args.empty() || a.args.size() > 3)
            throw Error("TypeError", "range expected at most 3 arguments, got " + std::to_string(a.args.size()));
        int64_t start = 0, stop, step = 1;
        if (a.args.size() == 1) {
            stop = jinja_range_arg(a.args[0]);
        } else {
            start = jinja_range_arg(a.args[0]);
            stop = jinja_range_arg(a.args[1]);
            if (a.args.size() == 3) step = jinja_range_arg(a.args[2]);
        }
        if (step == 0) throw Error("ValueError", "range() arg 3 must not be zero");
        auto r = std::make_shared<RangeObject>(start, stop, step);
        if (r->size() > kJinjaMaxRange)
            throw Error("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        return Value::object(r);
    });
    context.emplace("dict", Value::object(std::make_shared<JinjaDictGlobal>()));
    fn("namespace", [](Runtime& rt, CallArgs& a) {
        // transformers TemplateNamespace(*args, **kwargs): dict(*args, **kwargs), no '_' names.
        const Value d = jinja_make_dict(rt, a);
        auto ns = std::make_shared<NamespaceObject>();
        for (const auto& kv : d.pairs()) {
            if (kv.first.kind != Kind::String)
                throw Error("NotSupported", "namespace() with a non-string key is not supported");
            ns->set(kv.first.str(), kv.second);
        }
        return Value::object(ns);
    });
    fn("cycler", [](Runtime&, CallArgs& a) {
        if (!a.kwargs.empty()) throw Error("TypeError", "cycler() takes no keyword arguments");
        if (a.args.empty()) throw Error("RuntimeError", "at least one item has to be provided");
        auto c = std::make_shared<CyclerObject>(a.args);
        return Value::object(c);
    });
    fn("joiner", [](Runtime&, CallArgs& a) {
        auto args = bind_args("joiner", a, {"sep"}, 0);
        auto j = std::make_shared<JoinerObject>(args[0] ? *args[0] : Value::string(", "));
        return Value::object(j);
    });
    fn("lipsum", [](Runtime&, CallArgs&) -> Value {
        throw Error("NotSupported", "lipsum() is not supported by QuantLab's chat-template engine");
    });
    fn("raise_exception", [](Runtime&, CallArgs& a) -> Value {
        // transformers: raise jinja2.exceptions.TemplateError(message)
        auto args = bind_args("raise_exception", a, {"message"}, 1);
        throw Error("TemplateError", to_str(*args[0]));
    });
    fn("strftime_now", [strftime](Runtime& rt, CallArgs& a) {
        auto args = bind_args("strftime_now", a, {"format"}, 1);
        if (args[0]->kind != Kind::String)
            throw Error("TypeError", "strftime() argument 1 must be str, not " + type_name(*args[0]));
        return make_string(rt, strftime(args[0]->str()));
    });
}

}  // namespace ql::jinja
