// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_checks.h"

#include <algorithm>
#include <set>

#include "engine/text/jinja_filters.h"
#include "engine/text/jinja_is_tests.h"
#include "engine/text/jinja_lexer.h"

namespace ql::jinja {

namespace {

class JinjaChecker {
public:
    void body(Body& b, bool soft, bool in_loop) {
        for (auto& s : b) statement(*s, soft, in_loop);
    }

private:
    void statement(Stmt& s, bool soft, bool in_loop) {
        switch (s.type) {
        case StmtType::Output:
            for (auto& e : s.exprs) expr(*e, soft);
            break;
        case StmtType::If:
            // visit_If: the test and all branches in a soft frame.
            for (auto& br : s.branches) {
                expr(*br.first, true);
                body(br.second, true, in_loop);
            }
            body(s.else_body, true, in_loop);
            break;
        case StmtType::For:
            if (stores_loop(s)) throw SyntaxError(s.line, s.column, "Can't assign to special loop variable in for-loop target");
            expr(*s.value, soft);
            if (s.test) expr(*s.test, false);
            body(s.body, false, true);
            body(s.else_body, false, in_loop);
            break;
        case StmtType::Set:
            expr(*s.value, soft);
            break;
        case StmtType::SetBlock:
            body(s.body, false, in_loop);
            if (s.filter) expr(*s.filter, false);
            break;
        case StmtType::Macro:
        case StmtType::CallBlock:
            macro_flags(s);
            for (auto& d : s.defaults) expr(*d, false);
            if (s.value) expr(*s.value, soft);
            body(s.body, false, false);
            break;
        case StmtType::FilterBlock:
            body(s.body, false, in_loop);
            expr(*s.filter, false);
            break;
        case StmtType::With:
            for (auto& e : s.exprs) expr(*e, soft);
            body(s.body, false, in_loop);
            break;
        case StmtType::Generation:
            body(s.body, false, false);
            break;
        case StmtType::Break:
        case StmtType::Continue:
            if (!in_loop)
                throw SyntaxError(s.line, s.column,
                                  std::string("'") + (s.type == StmtType::Break ? "break" : "continue") + "' outside loop");
            break;
        }
    }

    void expr(Expr& e, bool soft) {
        if (e.type == ExprType::CondExpr) soft = true;  // visit_CondExpr uses frame.soft()
        if (e.type == ExprType::Filter || e.type == ExprType::Test) {
            const bool known = e.type == ExprType::Filter ? is_jinja_filter(e.name) : is_jinja_test(e.name);
            if (!known) {
                if (!soft)
                    throw SyntaxError(e.line, e.column,
                                      std::string("No ") + (e.type == ExprType::Filter ? "filter" : "test") + " named '" +
                                          e.name + "'.");
                e.unknown = true;
            }
        }
        for (ExprPtr* c : {&e.a, &e.b, &e.c, &e.dyn_args, &e.dyn_kwargs})
            if (*c) expr(**c, soft);
        for (auto& x : e.items) expr(*x, soft);
        for (auto& k : e.kwargs) expr(*k.value, soft);
    }

    // For: any Name stored as `loop` inside the node (compiler.visit_For uses node.find_all).
    static bool stores_loop(const Stmt& s) {
        bool found = false;
        walk_names_stmt(s, [&](const std::string& name, bool store) {
            if (store && name == "loop") found = true;
        });
        return found;
    }

    // macro_body: caller/kwargs/varargs read before any assignment anywhere in the body
    // (find_undeclared with UndeclaredNameVisitor, in nodes' field order).
    static void macro_flags(Stmt& s) {
        std::set<std::string> names = {"caller", "kwargs", "varargs"};
        std::set<std::string> undeclared;
        for (const auto& st : s.body)
            walk_names_stmt(*st, [&](const std::string& name, bool store) {
                if (!names.count(name)) return;
                if (store)
                    names.erase(name);
                else
                    undeclared.insert(name);
            });
        const auto has_param = [&](const char* p) { return std::find(s.params.begin(), s.params.end(), p) != s.params.end(); };
        if (undeclared.count("caller")) {
            if (has_param("caller")) {
                const auto idx = std::find(s.params.begin(), s.params.end(), "caller") - s.params.begin();
                const auto first_default = static_cast<long>(s.params.size() - s.defaults.size());
                if (idx < first_default)
                    throw SyntaxError(s.line, s.column,
                                      "When defining macros or call blocks the special \"caller\" argument must be "
                                      "omitted or be given a default.");
            } else {
                s.caller = true;
            }
        }
        s.catch_kwargs = undeclared.count("kwargs") && !has_param("kwargs");
        s.catch_varargs = undeclared.count("varargs") && !has_param("varargs");
    }

    template <class F>
    static void walk_names_expr(const Expr& e, bool store, F&& f) {
        if (e.type == ExprType::Name) {
            f(e.name, store);
            return;
        }
        if (e.type == ExprType::Tuple && store) {
            for (const auto& x : e.items) walk_names_expr(*x, true, f);
            return;
        }
        // Field order: node/expr/test first, then the rest (nodes.py `fields`).
        if (e.type == ExprType::CondExpr) {
            walk_names_expr(*e.a, false, f);
            walk_names_expr(*e.b, false, f);
            if (e.c) walk_names_expr(*e.c, false, f);
            return;
        }
        for (const ExprPtr* c : {&e.a, &e.b, &e.c})
            if (*c) walk_names_expr(**c, false, f);
        for (const auto& x : e.items) walk_names_expr(*x, false, f);
        for (const auto& k : e.kwargs) walk_names_expr(*k.value, false, f);
        if (e.dyn_args) walk_names_expr(*e.dyn_args, false, f);
        if (e.dyn_kwargs) walk_names_expr(*e.dyn_kwargs, false, f);
    }

    template <class F>
    static void walk_names_stmt(const Stmt& s, F&& f) {
        auto walk_body = [&](const Body& b) {
            for (const auto& x : b) walk_names_stmt(*x, f);
        };
        switch (s.type) {
        case StmtType::Output:
            for (const auto& e : s.exprs) walk_names_expr(*e, false, f);
            break;
        case StmtType::If:
            for (const auto& br : s.branches) {
                walk_names_expr(*br.first, false, f);
                walk_body(br.second);
            }
            walk_body(s.else_body);
            break;
        case StmtType::For:
            walk_names_expr(*s.target, true, f);
            walk_names_expr(*s.value, false, f);
            walk_body(s.body);
            walk_body(s.else_body);
            if (s.test) walk_names_expr(*s.test, false, f);
            break;
        case StmtType::Set:
            walk_names_expr(*s.target, true, f);
            walk_names_expr(*s.value, false, f);
            break;
        case StmtType::SetBlock:
            walk_names_expr(*s.target, true, f);
            if (s.filter) walk_names_expr(*s.filter, false, f);
            walk_body(s.body);
            break;
        case StmtType::Macro:
        case StmtType::CallBlock:
            if (s.value) walk_names_expr(*s.value, false, f);
            for (const auto& p : s.params) f(p, true);
            for (const auto& d : s.defaults) walk_names_expr(*d, false, f);
            walk_body(s.body);
            break;
        case StmtType::FilterBlock:
            walk_body(s.body);
            walk_names_expr(*s.filter, false, f);
            break;
        case StmtType::With:
            for (const auto& t : s.targets) walk_names_expr(*t, true, f);
            for (const auto& e : s.exprs) walk_names_expr(*e, false, f);
            walk_body(s.body);
            break;
        case StmtType::Generation: walk_body(s.body); break;
        case StmtType::Break:
        case StmtType::Continue: break;
        }
    }
};

}  // namespace

void check_template(Body& body) { JinjaChecker().body(body, false, false); }

}  // namespace ql::jinja
