// SPDX-License-Identifier: GPL-3.0-or-later
// Renders a parsed template (jinja_parser.h) the way Jinja2's generated code runs it
// (jinja2/compiler.py, jinja2/runtime.py): for-loops, macros, call blocks and set blocks get
// their own scope (assignments there do not leak), if-blocks do not; namespace() objects carry
// state out of loops; `loop` is bound in each iteration; for-else runs when no iteration completed;
// undefined names print as "" and raise when used further. Every evaluation step, the output and
// the macro depth are bounded by Limits (the template is untrusted input).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_value.h"

namespace ql::jinja {

struct Limits {
    size_t max_output_bytes = 1 << 20;  // also bounds every string and list the template builds
    int64_t max_steps = 1'000'000;      // expression evaluations, loop iterations, copied items
    int max_depth = 64;                 // nested macro calls, call blocks and recursive loops
};

// A frame's variables (jinja2's Frame/Symbols at run time); lookups fall back to the parent.
struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value>> vars;
    const Value* find(const std::string& name) const;
    void set(const std::string& name, Value v);
};

class Interpreter final : public Runtime {
public:
    explicit Interpreter(const Limits& limits) : limits_(limits) {}
    ~Interpreter() override;
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    // Renders `body` with the template's context (render variables over globals). Throws Error
    // with error_line() set to the template line that raised.
    std::string render(const Body& body, const std::unordered_map<std::string, Value>& context);
    // The line of the innermost node that raised the last Error (0 when unknown).
    int error_line() const { return error_line_; }

    // Runtime
    void charge(int64_t steps) override;
    size_t max_string_bytes() const override { return limits_.max_output_bytes; }
    Value call(const Value& callee, CallArgs args) override;
    Value call_filter(const std::string& name, const Value& value, CallArgs args) override;
    bool call_test(const std::string& name, const Value& value, CallArgs args) override;
    void track(const std::shared_ptr<Object>& o) override { tracked_.push_back(o); }

    // Runs a macro or call block's body (MacroObject::call).
    Value call_macro(const Stmt& macro, const std::string& name, const std::shared_ptr<Scope>& closure, CallArgs& args);

private:
    enum class Flow { Next, Break, Continue };
    using ScopePtr = std::shared_ptr<Scope>;

    Flow exec_body(const Body& body, const ScopePtr& scope);
    Flow exec(const Stmt& s, const ScopePtr& scope);
    Flow exec_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth);
    // Runs `body` in `scope` into a fresh buffer.
    std::pair<std::string, Flow> capture(const Body& body, const ScopePtr& scope);
    Value eval(const Expr& e, const ScopePtr& scope);
    Value eval_inner(const Expr& e, const ScopePtr& scope);
    CallArgs eval_args(const Expr& e, const ScopePtr& scope);
    Value lookup(const std::string& name, const Scope& scope) const;
    void bind(const Expr& target, const Value& value, Scope& scope);
    void assign(const Expr& target, const Value& value, const ScopePtr& scope);
    Value apply_block_filter(const Expr& filter, const std::string& text, const ScopePtr& scope);
    void emit(const std::string& text);
    void note_line(int line);

    Limits limits_;
    const std::unordered_map<std::string, Value>* context_ = nullptr;
    std::string* out_ = nullptr;
    const Value* block_input_ = nullptr;
    int64_t steps_ = 0;
    int depth_ = 0;
    int nest_ = 0;
    int error_line_ = 0;
    std::vector<std::shared_ptr<Object>> tracked_;
};

}  // namespace ql::jinja
