// SPDX-License-Identifier: GPL-3.0-or-later
// The values of QuantLab's Jinja engine (engine/text/chat_template.h): the Python objects a chat
// template sees under transformers' ImmutableSandboxedEnvironment, with Python's truthiness,
// str(), repr(), ==, < and `in`. Lists, tuples and dicts are immutable once built (the sandbox
// refuses list.append and dict.update), so they are shared, not copied; the few mutable things
// (namespace(), loop state, generators) are Objects.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ql::jinja {

// A Python exception raised while rendering: `kind` is its class name (TypeError, UndefinedError,
// SecurityError, TemplateError for raise_exception, ...) or LimitError for QuantLab's limits. The
// interpreter adds the template's origin and line when it turns this into a UserError.
class Error : public std::runtime_error {
public:
    Error(std::string kind, const std::string& message) : std::runtime_error(message), kind_(std::move(kind)) {}
    const std::string& kind() const { return kind_; }

private:
    std::string kind_;
};

// Nesting past this depth in repr/str/==/tojson raises (Python would hit its recursion limit).
constexpr int kMaxValueDepth = 400;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Object };

class Object;
struct Sequence;
struct Mapping;

struct Value {
    Kind kind = Kind::Undefined;
    // Bool: the value. String: a markupsafe.Markup (the `safe` filter). Undefined: the sandbox's
    // unsafe_undefined (raises SecurityError rather than UndefinedError when used).
    bool flag = false;
    int64_t i = 0;
    double f = 0;
    std::shared_ptr<const std::string> text;  // String; Undefined: the message it raises with
    std::shared_ptr<const Sequence> seq;      // List, Tuple
    std::shared_ptr<const Mapping> map;       // Dict
    std::shared_ptr<Object> obj;              // Object

    static Value undefined(std::string message, bool security = false);
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t v);
    static Value real(double v);
    static Value string(std::string s, bool markup = false);
    static Value list(std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    // keys_unique: the caller guarantees distinct keys (JSON objects), which skips the O(n^2) merge.
    static Value dict(std::vector<std::pair<Value, Value>> items, bool keys_unique = false);
    static Value object(std::shared_ptr<Object> o);

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_none() const { return kind == Kind::None; }
    bool is_string() const { return kind == Kind::String; }
    bool is_markup() const { return kind == Kind::String && flag; }
    // bool is an int in Python: True + 1 == 2, "ab"[True] == "b".
    bool is_int_like() const { return kind == Kind::Int || kind == Kind::Bool; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Bool || kind == Kind::Float; }
    bool is_list_or_tuple() const { return kind == Kind::List || kind == Kind::Tuple; }
    int64_t as_int() const { return kind == Kind::Bool ? (flag ? 1 : 0) : i; }
    double as_double() const { return kind == Kind::Float ? f : static_cast<double>(as_int()); }
    const std::string& str() const { return *text; }
    const std::vector<Value>& items() const;
    const std::vector<std::pair<Value, Value>>& pairs() const;
};

struct Sequence {
    std::vector<Value> items;
    int depth = 1;  // nesting depth of lists/tuples/dicts inside, for kMaxValueDepth
    // A namedtuple's field names (groupby's (grouper, list) tuples); empty for plain tuples.
    std::vector<std::string> fields;
};

struct Mapping {
    std::vector<std::pair<Value, Value>> items;  // insertion order, as Python's dict
    int depth = 1;
    // dict[key] by Python equality (1 == 1.0 == True); nullptr when absent.
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
};

struct CallArgs {
    std::vector<Value> args;
    std::vector<std::pair<std::string, Value>> kwargs;
};

// What built-in functions, filters and generators need from the interpreter.
class Runtime {
public:
    virtual ~Runtime() = default;
    // Counts evaluation steps (work); throws Error("LimitError") past the template's limit.
    virtual void charge(int64_t steps) = 0;
    // Largest string or list a template may build (the output limit).
    virtual size_t max_string_bytes() const = 0;
    virtual Value call(const Value& callee, CallArgs args) = 0;
    virtual Value call_filter(const std::string& name, const Value& value, CallArgs args) = 0;
    virtual bool call_test(const std::string& name, const Value& value, CallArgs args) = 0;
    // Keeps an object alive until the rendering ends, then calls its release() (see ObjectTracking).
    virtual void track(const std::shared_ptr<Object>& o) = 0;
};

// Python objects other than the plain data types: namespace(), macros, loop, range(), dict views,
// generators, bound methods.
class Object : public std::enable_shared_from_this<Object> {
public:
    virtual ~Object() = default;
    virtual const char* type_name() const = 0;  // type(x).__name__
    virtual std::string repr() const;           // "<type_name object>" unless overridden
    // getattr(x, name) as Python finds it; nullopt for AttributeError.
    virtual std::optional<Value> attribute(Runtime& rt, const std::string& name);
    virtual bool callable() const { return false; }
    virtual Value call(Runtime& rt, CallArgs& args);
    // bool(x): objects with a len() are true when it is non-zero, others always true.
    virtual bool truthy() const { return length().value_or(1) != 0; }
    virtual std::optional<int64_t> length() const { return std::nullopt; }  // nullopt: len() raises
    virtual bool iterable() const { return false; }
    // iter(x) drained into a vector; a generator is consumed by this.
    virtual std::vector<Value> iterate(Runtime& rt);
    // x[key]; nullopt when the type has no __getitem__. May raise IndexError/KeyError as Error.
    virtual std::optional<Value> subscript(Runtime& rt, const Value& key);
    virtual bool has_getitem() const { return false; }
    virtual bool equals(const Object& other) const { return this == &other; }
    virtual void release() {}
};

// Value helpers with Python's semantics. `depth` guards against deep or cyclic nesting.
std::string type_name(const Value& v);
bool truthy(const Value& v);
std::string to_str(const Value& v, int depth = 0);  // str(v)
std::string repr(const Value& v, int depth = 0);    // repr(v)
bool equals(const Value& a, const Value& b, int depth = 0);
// a OP b for OP in "<", "<=", ">", ">="; raises TypeError for unorderable types.
bool ordered_compare(const std::string& op, const Value& a, const Value& b, int depth = 0);
// len(v); raises TypeError when v has no length.
int64_t length_of(const Value& v);
// list(iter(v)); raises TypeError when v is not iterable. Undefined iterates as empty.
std::vector<Value> iterate(Runtime& rt, const Value& v);
bool is_iterable(const Value& v);
// item in container (Python `in`).
bool contains(Runtime& rt, const Value& container, const Value& item);
// Raises the error an undefined value carries (UndefinedError or SecurityError).
[[noreturn]] void raise_undefined(const Value& v);
// Raises TypeError "unhashable type: 'list'" for values that cannot be dict keys or set members.
void require_hashable(const Value& v);

// While one exists (Interpreter::render holds one), every Object wrapped by Value::object() is
// handed to that runtime's track(): at the end of the rendering all of them release what they
// hold, so chains and cycles of objects (a namespace holding itself, generators over generators,
// a macro stored in the scope it closes over) never free recursively or leak.
class ObjectTracking {
public:
    explicit ObjectTracking(Runtime& rt);
    ~ObjectTracking();
    ObjectTracking(const ObjectTracking&) = delete;
    ObjectTracking& operator=(const ObjectTracking&) = delete;

private:
    Runtime* previous_;
};

// Builds a string, list or tuple after checking it against the runtime's size limit and charging
// its size as work.
Value make_string(Runtime& rt, std::string s, bool markup = false);
Value make_list(Runtime& rt, std::vector<Value> items, bool tuple = false);

}  // namespace ql::jinja
