// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_parser.h"

#include <algorithm>
#include <set>

#include "engine/text/jinja_checks.h"

namespace ql::jinja {

namespace {

std::string jinja_describe(const Token& t) {
    switch (t.type) {
    case TokenType::Name: return t.value;
    case TokenType::Operator: return t.value;
    case TokenType::Data: return "template data / text";
    case TokenType::VariableBegin: return "begin of print statement";
    case TokenType::VariableEnd: return "end of print statement";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::String: return "string";
    case TokenType::Integer: return "integer";
    case TokenType::Float: return "float";
    case TokenType::Eof: return "end of template";
    }
    return "token";
}

class JinjaParser {
public:
    explicit JinjaParser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

    Body parse() {
        Body body = subparse({});
        return body;
    }

private:
    // --- token stream (jinja2/lexer.py TokenStream) ---
    const Token& cur() const { return toks_[p_]; }
    const Token& look() const { return toks_[std::min(p_ + 1, toks_.size() - 1)]; }
    Token next() {
        Token t = toks_[p_];
        if (toks_[p_].type != TokenType::Eof) ++p_;
        return t;
    }
    bool at_name(const char* v) const { return cur().type == TokenType::Name && cur().value == v; }
    bool at_op(const char* v) const { return cur().type == TokenType::Operator && cur().value == v; }
    bool skip_name(const char* v) {
        if (!at_name(v)) return false;
        next();
        return true;
    }
    bool skip_op(const char* v) {
        if (!at_op(v)) return false;
        next();
        return true;
    }

    [[noreturn]] void fail(const std::string& message) const { fail_at(cur(), message); }
    [[noreturn]] static void fail_at(const Token& t, const std::string& message) {
        throw SyntaxError(t.line, t.column, message);
    }
    [[noreturn]] static void fail_at(const Expr& e, const std::string& message) {
        throw SyntaxError(e.line, e.column, message);
    }

    void expect_failed(const std::string& what) const {
        if (cur().type == TokenType::Eof) fail("unexpected end of template, expected '" + what + "'.");
        fail("expected token '" + what + "', got '" + jinja_describe(cur()) + "'");
    }
    Token expect_op(const char* v) {
        if (!at_op(v)) expect_failed(v);
        return next();
    }
    Token expect_name() {
        if (cur().type != TokenType::Name) expect_failed("name");
        return next();
    }
    Token expect_name(const char* v) {
        if (!at_name(v)) expect_failed(v);
        return next();
    }
    Token expect(TokenType type) {
        if (cur().type != type) {
            Token t;
            t.type = type;
            expect_failed(jinja_describe(t));
        }
        return next();
    }

    // Nesting guard for the recursive descent.
    struct Depth {
        explicit Depth(JinjaParser& p) : p_(p) {
            if (++p_.nesting_ > kMaxTemplateNesting)
                p_.fail("template nested deeper than " + std::to_string(kMaxTemplateNesting) + " levels");
        }
        ~Depth() { --p_.nesting_; }
        JinjaParser& p_;
    };

    ExprPtr node(ExprType type, const Token& at) {
        auto e = std::make_unique<Expr>();
        e->type = type;
        e->line = at.line;
        e->column = at.column;
        return e;
    }
    // Sets the height from the children and refuses trees deeper than the limit.
    ExprPtr sealed(ExprPtr e) {
        int d = 0;
        auto see = [&](const ExprPtr& c) {
            if (c) d = std::max(d, c->depth);
        };
        see(e->a);
        see(e->b);
        see(e->c);
        see(e->dyn_args);
        see(e->dyn_kwargs);
        for (const auto& x : e->items) see(x);
        for (const auto& k : e->kwargs) see(k.value);
        e->depth = d + 1;
        if (e->depth > kMaxTemplateNesting)
            fail_at(*e, "expression nested deeper than " + std::to_string(kMaxTemplateNesting) + " levels");
        return e;
    }
    ExprPtr binary(ExprType type, ExprPtr a, ExprPtr b, const Token& at) {
        ExprPtr e = node(type, at);
        e->a = std::move(a);
        e->b = std::move(b);
        return sealed(std::move(e));
    }

    // --- statements (jinja2/parser.py) ---
    bool at_end_token(const std::vector<std::string>& end_tokens) const {
        if (cur().type != TokenType::Name) return false;
        return std::find(end_tokens.begin(), end_tokens.end(), cur().value) != end_tokens.end();
    }

    Body subparse(const std::vector<std::string>& end_tokens) {
        Body body;
        Stmt* output = nullptr;
        auto add_output = [&](ExprPtr e) {
            if (!output) {
                auto s = std::make_unique<Stmt>();
                s->type = StmtType::Output;
                s->line = e->line;
                s->column = e->column;
                output = s.get();
                body.push_back(std::move(s));
            }
            output->exprs.push_back(std::move(e));
        };
        while (cur().type != TokenType::Eof) {
            const Token t = cur();
            if (t.type == TokenType::Data) {
                ExprPtr e = node(ExprType::Const, t);
                e->constant = Value::string(t.value);
                e->data = true;
                add_output(std::move(e));
                next();
            } else if (t.type == TokenType::VariableBegin) {
                next();
                add_output(parse_tuple(false, true, {}, false, false));
                expect(TokenType::VariableEnd);
            } else if (t.type == TokenType::BlockBegin) {
                output = nullptr;
                next();
                if (!end_tokens.empty() && at_end_token(end_tokens)) return body;
                body.push_back(parse_statement());
                expect(TokenType::BlockEnd);
            } else {
                fail("internal parsing error");
            }
        }
        return body;
    }

    Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
        skip_op(":");
        expect(TokenType::BlockEnd);
        end_stack_.push_back(end_tokens);
        Body result = subparse(end_tokens);
        end_stack_.pop_back();
        if (cur().type == TokenType::Eof) fail_eof(end_tokens);
        if (drop_needle) next();
        return result;
    }

    [[noreturn]] void fail_eof(const std::vector<std::string>& end_tokens) const {
        std::string message = "Unexpected end of template.";
        if (!end_tokens.empty()) {
            message += " Jinja was looking for the following tags: ";
            for (size_t k = 0; k < end_tokens.size(); ++k) message += (k ? " or '" : "'") + end_tokens[k] + "'";
            message += ".";
        }
        if (!tag_stack_.empty()) message += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
        fail(message);
    }

    [[noreturn]] void fail_unknown_tag(const Token& t) const {
        std::string message = "Encountered unknown tag '" + t.value + "'.";
        bool expected = false;
        for (const auto& ends : end_stack_)
            if (std::find(ends.begin(), ends.end(), t.value) != ends.end()) expected = true;
        if (!end_stack_.empty()) {
            std::string looking;
            for (size_t k = 0; k < end_stack_.back().size(); ++k)
                looking += (k ? " or '" : "'") + end_stack_.back()[k] + "'";
            if (expected)
                message += " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for " +
                           looking + ".";
            else
                message += " Jinja was looking for the following tags: " + looking + ".";
        }
        if (!tag_stack_.empty()) message += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
        fail_at(t, message);
    }

    StmtPtr stmt(StmtType type, const Token& at) {
        auto s = std::make_unique<Stmt>();
        s->type = type;
        s->line = at.line;
        s->column = at.column;
        return s;
    }

    StmtPtr parse_statement() {
        Depth guard(*this);
        const Token t = cur();
        if (t.type != TokenType::Name) fail("tag name expected");
        const std::string& n = t.value;
        static const std::set<std::string> unsupported = {"block", "extends", "include", "from", "import", "autoescape"};
        if (unsupported.count(n))
            fail_at(t, "{% " + n + " %} is valid Jinja but QuantLab's chat-template engine does not support it");
        static const std::set<std::string> known = {"for",    "if",   "set",    "macro",      "with",  "print",
                                                    "call",   "filter", "generation", "break", "continue"};
        if (!known.count(n)) fail_unknown_tag(t);
        tag_stack_.push_back(n);
        StmtPtr s;
        if (n == "for") s = parse_for();
        else if (n == "if") s = parse_if();
        else if (n == "set") s = parse_set();
        else if (n == "macro") s = parse_macro();
        else if (n == "with") s = parse_with();
        else if (n == "print") s = parse_print();
        else if (n == "call") s = parse_call_block();
        else if (n == "filter") s = parse_filter_block();
        else if (n == "generation") {
            // transformers AssistantTracker.parse: the body up to endgeneration, called as caller().
            s = stmt(StmtType::Generation, next());
            s->body = parse_statements({"endgeneration"}, true);
        } else {
            s = stmt(n == "break" ? StmtType::Break : StmtType::Continue, next());
        }
        tag_stack_.pop_back();
        return s;
    }

    StmtPtr parse_for() {
        StmtPtr s = stmt(StmtType::For, expect_name("for"));
        s->target = parse_assign_target(true, false, {"in"}, false);
        expect_name("in");
        s->value = parse_tuple(false, false, {"recursive"}, false, false);
        if (skip_name("if")) s->test = parse_expression(true);
        s->recursive = skip_name("recursive");
        s->body = parse_statements({"endfor", "else"}, false);
        if (next().value != "endfor") s->else_body = parse_statements({"endfor"}, true);
        return s;
    }

    StmtPtr parse_if() {
        StmtPtr s = stmt(StmtType::If, expect_name("if"));
        while (true) {
            ExprPtr test = parse_tuple(false, false, {}, false, false);
            Body body = parse_statements({"elif", "else", "endif"}, false);
            s->branches.emplace_back(std::move(test), std::move(body));
            const Token t = next();
            if (t.type == TokenType::Name && t.value == "elif") continue;
            if (t.type == TokenType::Name && t.value == "else") s->else_body = parse_statements({"endif"}, true);
            break;
        }
        return s;
    }

    StmtPtr parse_set() {
        StmtPtr s = stmt(StmtType::Set, next());
        s->target = parse_assign_target(true, false, {}, true);
        if (skip_op("=")) {
            s->value = parse_tuple(false, true, {}, false, false);
            return s;
        }
        s->type = StmtType::SetBlock;
        s->filter = parse_filter(nullptr, false);
        s->body = parse_statements({"endset"}, true);
        return s;
    }

    StmtPtr parse_macro() {
        StmtPtr s = stmt(StmtType::Macro, next());
        s->name = parse_assign_target(false, true, {}, false)->name;
        parse_signature(*s);
        s->body = parse_statements({"endmacro"}, true);
        return s;
    }

    void parse_signature(Stmt& s) {
        expect_op("(");
        while (!at_op(")")) {
            if (!s.params.empty()) expect_op(",");
            ExprPtr arg = parse_assign_target(false, true, {}, false);
            if (skip_op("="))
                s.defaults.push_back(parse_expression(true));
            else if (!s.defaults.empty())
                fail("non-default argument follows default argument");
            s.params.push_back(arg->name);
        }
        expect_op(")");
    }

    StmtPtr parse_call_block() {
        StmtPtr s = stmt(StmtType::CallBlock, next());
        if (at_op("(")) parse_signature(*s);
        s->value = parse_expression(true);
        if (s->value->type != ExprType::Call) fail_at(*s->value, "expected call");
        s->body = parse_statements({"endcall"}, true);
        return s;
    }

    StmtPtr parse_filter_block() {
        StmtPtr s = stmt(StmtType::FilterBlock, next());
        s->filter = parse_filter(nullptr, true);
        s->body = parse_statements({"endfilter"}, true);
        return s;
    }

    StmtPtr parse_with() {
        StmtPtr s = stmt(StmtType::With, next());
        while (cur().type != TokenType::BlockEnd) {
            if (!s->targets.empty()) expect_op(",");
            s->targets.push_back(parse_assign_target(true, false, {}, false));
            expect_op("=");
            s->exprs.push_back(parse_expression(true));
        }
        s->body = parse_statements({"endwith"}, true);
        return s;
    }

    StmtPtr parse_print() {
        StmtPtr s = stmt(StmtType::Output, next());
        while (cur().type != TokenType::BlockEnd) {
            if (!s->exprs.empty()) expect_op(",");
            s->exprs.push_back(parse_expression(true));
        }
        return s;
    }

    // --- expressions ---
    static bool assignable(const Expr& e) {
        if (e.type == ExprType::Name)
            return e.name != "true" && e.name != "false" && e.name != "none" && e.name != "True" && e.name != "False" &&
                   e.name != "None";
        if (e.type == ExprType::NSRef) return true;
        if (e.type == ExprType::Tuple) {
            for (const auto& x : e.items)
                if (!assignable(*x)) return false;
            return true;
        }
        return false;
    }

    ExprPtr parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string>& extra_end,
                                bool with_namespace) {
        ExprPtr target;
        if (name_only) {
            const Token t = expect_name();
            target = node(ExprType::Name, t);
            target->name = t.value;
        } else if (with_tuple) {
            target = parse_tuple(true, true, extra_end, false, with_namespace);
        } else {
            target = parse_primary(with_namespace);
        }
        if (!assignable(*target)) {
            std::string what = target->type == ExprType::Const ? "const" : "expression";
            fail_at(*target, "can't assign to '" + what + "'");
        }
        return target;
    }

    ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

    ExprPtr parse_condexpr() {
        Depth guard(*this);
        const Token at = cur();
        ExprPtr expr1 = parse_or();
        while (skip_name("if")) {
            ExprPtr test = parse_or();
            ExprPtr expr3 = skip_name("else") ? parse_condexpr() : nullptr;
            ExprPtr e = node(ExprType::CondExpr, at);
            e->a = std::move(test);
            e->b = std::move(expr1);
            e->c = std::move(expr3);
            expr1 = sealed(std::move(e));
        }
        return expr1;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (at_name("or")) {
            const Token at = next();
            left = binary(ExprType::Or, std::move(left), parse_and(), at);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (at_name("and")) {
            const Token at = next();
            left = binary(ExprType::And, std::move(left), parse_not(), at);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            Depth guard(*this);
            const Token at = next();
            ExprPtr e = node(ExprType::Not, at);
            e->a = parse_not();
            return sealed(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const Token at = cur();
        ExprPtr expr = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().type == TokenType::Operator &&
                (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
                 cur().value == ">" || cur().value == ">=")) {
                op = next().value;
            } else if (skip_name("in")) {
                op = "in";
            } else if (at_name("not") && look().type == TokenType::Name && look().value == "in") {
                next();
                next();
                op = "notin";
            } else {
                break;
            }
            if (!cmp) {
                cmp = node(ExprType::Compare, at);
                cmp->a = std::move(expr);
            }
            cmp->ops.push_back(op);
            cmp->items.push_back(parse_math1());
        }
        return cmp ? sealed(std::move(cmp)) : std::move(expr);
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (at_op("+") || at_op("-")) {
            const Token at = next();
            left = binary(at.value == "+" ? ExprType::Add : ExprType::Sub, std::move(left), parse_concat(), at);
        }
        return left;
    }

    ExprPtr parse_concat() {
        const Token at = cur();
        ExprPtr first = parse_math2();
        if (!at_op("~")) return first;
        ExprPtr e = node(ExprType::Concat, at);
        e->items.push_back(std::move(first));
        while (skip_op("~")) e->items.push_back(parse_math2());
        return sealed(std::move(e));
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const Token at = next();
            const ExprType t = at.value == "*"    ? ExprType::Mul
                               : at.value == "/"  ? ExprType::Div
                               : at.value == "//" ? ExprType::FloorDiv
                                                  : ExprType::Mod;
            left = binary(t, std::move(left), parse_pow(), at);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (at_op("**")) {
            const Token at = next();
            left = binary(ExprType::Pow, std::move(left), parse_unary(true), at);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        Depth guard(*this);
        ExprPtr n;
        if (at_op("-") || at_op("+")) {
            const Token at = next();
            n = node(at.value == "-" ? ExprType::Neg : ExprType::Pos, at);
            n->a = parse_unary(false);
            n = sealed(std::move(n));
        } else {
            n = parse_primary(false);
        }
        n = parse_postfix(std::move(n));
        if (with_filter) n = parse_filter_expr(std::move(n));
        return n;
    }

    ExprPtr parse_primary(bool with_namespace) {
        Depth guard(*this);
        const Token t = cur();
        ExprPtr n;
        if (t.type == TokenType::Name) {
            next();
            if (t.value == "true" || t.value == "false" || t.value == "True" || t.value == "False") {
                n = node(ExprType::Const, t);
                n->constant = Value::boolean(t.value == "true" || t.value == "True");
            } else if (t.value == "none" || t.value == "None") {
                n = node(ExprType::Const, t);
                n->constant = Value::none();
            } else if (with_namespace && at_op(".")) {
                next();
                const Token attr = expect_name();
                n = node(ExprType::NSRef, t);
                n->name = t.value;
                n->attr = attr.value;
            } else {
                n = node(ExprType::Name, t);
                n->name = t.value;
            }
        } else if (t.type == TokenType::String) {
            std::string text;
            while (cur().type == TokenType::String) text += next().value;
            n = node(ExprType::Const, t);
            n->constant = Value::string(std::move(text));
        } else if (t.type == TokenType::Integer || t.type == TokenType::Float) {
            next();
            n = node(ExprType::Const, t);
            n->constant = t.type == TokenType::Integer ? Value::integer(t.int_value) : Value::real(t.float_value);
        } else if (t.type == TokenType::Operator && t.value == "(") {
            next();
            n = parse_tuple(false, true, {}, true, false);
            expect_op(")");
        } else if (t.type == TokenType::Operator && t.value == "[") {
            next();
            n = node(ExprType::List, t);
            while (!at_op("]")) {
                if (!n->items.empty()) expect_op(",");
                if (at_op("]")) break;
                n->items.push_back(parse_expression(true));
            }
            expect_op("]");
            n = sealed(std::move(n));
        } else if (t.type == TokenType::Operator && t.value == "{") {
            next();
            n = node(ExprType::Dict, t);
            while (!at_op("}")) {
                if (!n->items.empty()) expect_op(",");
                if (at_op("}")) break;
                n->items.push_back(parse_expression(true));
                expect_op(":");
                n->items.push_back(parse_expression(true));
            }
            expect_op("}");
            n = sealed(std::move(n));
        } else {
            fail("unexpected '" + jinja_describe(t) + "'");
        }
        return n;
    }

    bool is_tuple_end(const std::vector<std::string>& extra_end) const {
        if (cur().type == TokenType::VariableEnd || cur().type == TokenType::BlockEnd || at_op(")")) return true;
        return cur().type == TokenType::Name &&
               std::find(extra_end.begin(), extra_end.end(), cur().value) != extra_end.end();
    }

    ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                        bool explicit_parentheses, bool with_namespace) {
        const Token at = cur();
        std::vector<ExprPtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            args.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
            if (at_op(","))
                is_tuple = true;
            else
                break;
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parentheses) fail("Expected an expression, got '" + jinja_describe(cur()) + "'");
        }
        ExprPtr t = node(ExprType::Tuple, at);
        t->items = std::move(args);
        return sealed(std::move(t));
    }

    ExprPtr parse_postfix(ExprPtr n) {
        while (true) {
            if (at_op(".") || at_op("["))
                n = parse_subscript(std::move(n));
            else if (at_op("("))
                n = parse_call(std::move(n));
            else
                break;
        }
        return n;
    }

    ExprPtr parse_filter_expr(ExprPtr n) {
        while (true) {
            if (at_op("|"))
                n = parse_filter(std::move(n), false);
            else if (at_name("is"))
                n = parse_test(std::move(n));
            else if (at_op("("))
                n = parse_call(std::move(n));
            else
                break;
        }
        return n;
    }

    ExprPtr parse_subscript(ExprPtr n) {
        const Token t = next();
        if (t.value == ".") {
            const Token attr = next();
            if (attr.type == TokenType::Name) {
                ExprPtr e = node(ExprType::Getattr, t);
                e->a = std::move(n);
                e->name = attr.value;
                return sealed(std::move(e));
            }
            if (attr.type != TokenType::Integer) fail_at(attr, "expected name or number");
            ExprPtr e = node(ExprType::Getitem, t);
            e->a = std::move(n);
            e->b = node(ExprType::Const, attr);
            e->b->constant = Value::integer(attr.int_value);
            return sealed(std::move(e));
        }
        std::vector<ExprPtr> args;
        while (!at_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        ExprPtr e = node(ExprType::Getitem, t);
        e->a = std::move(n);
        if (args.size() == 1) {
            e->b = std::move(args[0]);
        } else {
            e->b = node(ExprType::Tuple, t);
            e->b->items = std::move(args);
            e->b = sealed(std::move(e->b));
        }
        return sealed(std::move(e));
    }

    ExprPtr parse_subscribed() {
        const Token at = cur();
        ExprPtr start;
        if (at_op(":")) {
            next();
        } else {
            ExprPtr e = parse_expression(true);
            if (!at_op(":")) return e;
            next();
            start = std::move(e);
        }
        ExprPtr s = node(ExprType::Slice, at);
        s->a = std::move(start);
        if (!at_op(":") && !at_op("]") && !at_op(",")) s->b = parse_expression(true);
        if (at_op(":")) {
            next();
            if (!at_op("]") && !at_op(",")) s->c = parse_expression(true);
        }
        return sealed(std::move(s));
    }

    void parse_call_args(Expr& e) {
        const Token at = expect_op("(");
        bool require_comma = false;
        auto ensure = [&](bool ok) {
            if (!ok) fail_at(at, "invalid syntax for function call expression");
        };
        while (!at_op(")")) {
            if (require_comma) {
                expect_op(",");
                if (at_op(")")) break;
            }
            if (at_op("*")) {
                ensure(!e.dyn_args && !e.dyn_kwargs);
                next();
                e.dyn_args = parse_expression(true);
            } else if (at_op("**")) {
                ensure(!e.dyn_kwargs);
                next();
                e.dyn_kwargs = parse_expression(true);
            } else if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().value == "=") {
                ensure(!e.dyn_kwargs);
                const std::string key = next().value;
                next();
                e.kwargs.push_back(Keyword{key, parse_expression(true)});
            } else {
                ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
                e.items.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr n) {
        ExprPtr e = node(ExprType::Call, cur());
        e->a = std::move(n);
        parse_call_args(*e);
        return sealed(std::move(e));
    }

    ExprPtr parse_filter(ExprPtr n, bool start_inline) {
        while (at_op("|") || start_inline) {
            if (!start_inline) next();
            const Token t = expect_name();
            std::string name = t.value;
            while (at_op(".")) {
                next();
                name += "." + expect_name().value;
            }
            ExprPtr e = node(ExprType::Filter, t);
            e->a = std::move(n);
            e->name = std::move(name);
            if (at_op("(")) parse_call_args(*e);
            n = sealed(std::move(e));
            start_inline = false;
        }
        return n;
    }

    ExprPtr parse_test(ExprPtr n) {
        const Token at = next();
        const bool negated = skip_name("not");
        const Token t = expect_name();
        ExprPtr e = node(ExprType::Test, at);
        e->name = t.value;
        while (at_op(".")) {
            next();
            e->name += "." + expect_name().value;
        }
        e->a = std::move(n);
        const Token& c = cur();
        const bool arg_start = c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Integer ||
                               c.type == TokenType::Float ||
                               (c.type == TokenType::Operator && (c.value == "[" || c.value == "{"));
        if (at_op("(")) {
            parse_call_args(*e);
        } else if (arg_start && !at_name("else") && !at_name("or") && !at_name("and")) {
            if (at_name("is")) fail("You cannot chain multiple tests with is");
            ExprPtr arg = parse_primary(false);
            e->items.push_back(parse_postfix(std::move(arg)));
        }
        e = sealed(std::move(e));
        if (!negated) return e;
        ExprPtr x = node(ExprType::Not, at);
        x->a = std::move(e);
        return sealed(std::move(x));
    }

    std::vector<Token> toks_;
    size_t p_ = 0;
    int nesting_ = 0;
    std::vector<std::string> tag_stack_;
    std::vector<std::vector<std::string>> end_stack_;
};

}  // namespace

Body parse_template(std::string_view source) {
    Body body = JinjaParser(tokenize(source)).parse();
    check_template(body);
    return body;
}

}  // namespace ql::jinja
