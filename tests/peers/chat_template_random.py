# SPDX-License-Identifier: GPL-3.0-or-later
"""Random Jinja templates for the chat-template peer check, in the format of
tests/data/chat_template_snippets.txt ("### name" headers). Deterministic for a seed.

Three kinds, each aimed at one part of the engine:
  expr:  {{ E }} / {% for x in E %} / {% set v = E %} over random expressions mixing literals of
         every type, the conversation, undefined names, operators, filters, tests, methods, slices;
  scope: nested for/if/set/set-block/with/call/filter blocks with break/continue, macros reading
         outer names and namespaces, printing every variable at the end (Jinja's scoping rules);
  ws:    text, tags, comments and raw blocks with random whitespace and -/+ control on each side.
Values whose Python repr carries a memory address (generators, bound methods) are never printed.

    chat_template_random.py --out FILE [--count N] [--seed S]
"""
import argparse
import random

ATOMS = ["0", "1", "-1", "2", "3", "7", "2.5", "-0.5", "1e3", "0.1", "true", "false", "none", "''", "'a'", "'abc'",
         "'Héllo Wörld'", "' x y '", "'10'", "'3.5'", "'a,b,c'", "[]", "[1, 2, 3]", "[3, 1, 2]", "['b', 'a', 'C']",
         "(1, 2)", "()", "{}", "{'a': 1, 'b': [2]}", "{'k': 'v', 'n': none}", "messages", "messages[0]", "messages[-1]",
         "tools", "nothing", "messages[0].content", "messages[0].role", "range(4)", "namespace(a=1)", "'<b>'|safe",
         "[{'n': 'x', 'v': 2}, {'n': 'y', 'v': 1}]", "'%s-%s'", "'{}!'", "bos_token", "add_generation_prompt",
         "(messages|length)", "'ΣΑΣ'", "'🙂x'"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "count", "first", "last", "join", "join(', ')", "default('d')", "default('d', true)", "list",
           "string", "int", "float", "trim", "upper", "lower", "capitalize", "title", "sort", "sum", "min", "max", "abs",
           "round", "round(1)", "tojson", "tojson(indent=1)", "tojson(sort_keys=true)", "dictsort", "replace('a', 'z')",
           "indent(2)", "center(9)", "wordcount", "safe", "e", "groupby('n')", "truncate(5)", "format(1, 2)",
           "attr('a')", "first|string", "list|length",
           # generator filters are listed (their repr has an address)
           "items|list", "select|list", "reject|list", "map('string')|list", "batch(2)|list", "slice(2)|list",
           "selectattr('n')|list", "map(attribute='n')|list", "selectattr('v', 'gt', 1)|list", "unique|list",
           "reverse|list"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "sequence", "iterable",
         "odd", "even", "boolean", "true", "false", "callable", "lower", "upper", "in [1, 'a']", "eq 1", "gt 0",
         "divisibleby 2", "sameas none", "escaped"]
METHODS = ["upper()", "lower()", "strip()", "split()", "split(',')", "startswith('a')", "endswith('c')",
           "replace('a', 'b')", "find('b')", "title()", "count('a')", "items()", "keys()", "values()", "get('a')",
           "get('z', 0)", "format(1)", "join(['1', '2'])", "index(1)", "copy()", "isdigit()", "zfill(4)", "rstrip('c')",
           "rsplit(',', 1)", "partition(',')", "isupper()", "a", "n", "0", "role", "content", "real"]


def expr_template(rnd: random.Random) -> str:
    def expr(d: int) -> str:
        r = rnd.random()
        if d <= 0 or r < 0.25:
            return rnd.choice(ATOMS)
        if r < 0.45:
            return "(%s %s %s)" % (expr(d - 1), rnd.choice(BINOPS), expr(d - 1))
        if r < 0.6:
            return "(%s|%s)" % (expr(d - 1), rnd.choice(FILTERS))
        if r < 0.7:
            return "(%s is %s%s)" % (expr(d - 1), rnd.choice(["", "not "]), rnd.choice(TESTS))
        if r < 0.8:
            return "%s.%s" % (expr(d - 1), rnd.choice(METHODS))
        if r < 0.85:
            return "%s[%s]" % (expr(d - 1), rnd.choice(["0", "-1", "1:", "::-1", "'a'", "'content'", ":2", "1:-1", "::2"]))
        if r < 0.9:
            return "(%s if %s else %s)" % (expr(d - 1), expr(d - 1), expr(d - 1))
        if r < 0.95:
            return "(not %s)" % expr(d - 1)
        return "[%s, %s]" % (expr(d - 1), expr(d - 1))

    e = expr(rnd.randint(1, 4))
    kind = rnd.random()
    if kind < 0.7:
        return "{{ %s }}" % e
    if kind < 0.85:
        return "{%% for x in %s %%}[{{ x }}{{ loop.index }}]{%% else %%}E{%% endfor %%}" % e
    return "{%% set v = %s %%}{%% if v %%}T{{ v }}{%% else %%}F{%% endif %%}" % e


SCOPE_VALUES = ["1", "'s'", "x", "y", "x ~ 'x'", "(y or 0) + 1", "loop.index if loop is defined else -1", "ns.a",
                "[x, y]", "m1()", "none", "caller() if caller is defined else 'nc'"]


def scope_template(rnd: random.Random) -> str:
    def stmt(d: int, loop: bool) -> str:
        r = rnd.random()
        if d <= 0 or r < 0.25:
            c = rnd.random()
            if c < 0.5:
                return "{%% set %s = %s %%}" % (rnd.choice(["x", "y", "ns.a", "ns.b"]), rnd.choice(SCOPE_VALUES))
            if c < 0.8:
                return "{{ %s }}," % rnd.choice(SCOPE_VALUES + ["ns.b", "loop.length if loop is defined else 'L'", "m2(1)"])
            return rnd.choice(["{% break %}", "{% continue %}"]) if loop else "{{ x }}"
        if r < 0.45:
            if rnd.random() < 0.5:
                seq = rnd.choice(["range(3)", "[]", "[1, 2]", "range(4) if true else []", "range(5) if i is defined"])
                return "{%% for %s in %s %%}%s{%% else %%}E%s{%% endfor %%}" % (
                    rnd.choice(["i", "x", "y"]), seq, body(d - 1, True), body(d - 2, loop))
            return "{%% for i in range(3) if i != 1 %%}%s{%% endfor %%}" % body(d - 1, True)
        if r < 0.6:
            return "{%% if %s %%}%s{%% elif %s %%}%s{%% else %%}%s{%% endif %%}" % (
                rnd.choice(["x", "y is defined", "loop is defined", "true", "ns.a"]), body(d - 1, loop),
                rnd.choice(["y", "false"]), body(d - 1, loop), body(d - 1, loop))
        if r < 0.7:
            return "{%% set %s %%}%s{%% endset %%}" % (rnd.choice(["x", "y"]), body(d - 1, loop))
        if r < 0.8:
            return "{%% with x = %s %%}%s{%% endwith %%}" % (rnd.choice(SCOPE_VALUES), body(d - 1, loop))
        if r < 0.9:
            return "{%% call m2(2) %%}%s{%% endcall %%}" % body(d - 1, False)
        return "{%% filter upper %%}%s{%% endfilter %%}" % body(d - 1, loop)

    def body(d: int, loop: bool) -> str:
        return "".join(stmt(d, loop) for _ in range(rnd.randint(1, 3)))

    pre = ("{% set ns = namespace(a=0, b=1) %}{% macro m1() %}[m1 {{ x }} {{ y }}]{% endmacro %}"
           "{% macro m2(p, q=x) %}[m2 {{ p }} {{ q }} {{ caller() if caller is defined else '' }}]{% endmacro %}")
    if rnd.random() < 0.5:
        pre += "{%% set x = %s %%}" % rnd.choice(SCOPE_VALUES[:3])
    return pre + body(3, False) + "|{{ x }}|{{ y }}|{{ ns.a }}|{{ ns.b }}"


WHITESPACE = ["", " ", "  ", "\n", "\n\n", "\t", " \n", "\n ", "\n  ", "  \n  ", "\u00a0", "\u3000\n"]


def ws_template(rnd: random.Random) -> str:
    def sign(options):
        return rnd.choice(options)

    def block(body):
        return "{%" + sign(["", "", "-", "+"]) + " " + body + " " + sign(["", "", "-", "+"]) + "%}"

    parts, stack = [], []
    for k in range(rnd.randint(3, 25)):
        parts.append(rnd.choice(WHITESPACE))
        r = rnd.random()
        if r < 0.2:
            parts.append(rnd.choice(["a", "bc", "x y", "."]))
        elif r < 0.35:
            parts.append("{{" + sign(["", "-"]) + " " + rnd.choice(["'v'", "1", "x", "none"]) + " " + sign(["", "-"]) + "}}")
        elif r < 0.45:
            parts.append("{#" + sign(["", "-", "+"]) + " comment " + sign(["", "-", "+"]) + "#}")
        elif r < 0.6:
            kind = rnd.choice(["if", "for", "set", "macro", "filter"])
            opener = {"if": "if " + rnd.choice(["true", "false", "x"]), "for": "for i in range(2)", "set": "set x",
                      "macro": "macro m%d()" % k, "filter": "filter upper"}[kind]
            parts.append(block(opener))
            stack.append("end" + kind)
        elif r < 0.75 and stack:
            parts.append(block(stack.pop()))
        elif r < 0.8:
            parts.append("{%" + sign(["", "-", "+"]) + " raw " + sign(["", "-"]) + "%}" + rnd.choice(WHITESPACE) +
                         "{{ raw }}" + rnd.choice(WHITESPACE) + block("endraw"))
        else:
            parts.append(block("set y = 1"))
    while stack:
        parts.append(rnd.choice(WHITESPACE))
        parts.append(block(stack.pop()))
    parts.append(rnd.choice(WHITESPACE))
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=200, help="templates of each kind")
    ap.add_argument("--seed", type=int, default=39)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    out = []
    for kind, make in (("expr", expr_template), ("scope", scope_template), ("ws", ws_template)):
        for i in range(a.count):
            text = make(rnd)
            assert "\n### " not in "\n" + text
            out.append("### random-%s-%d\n%s" % (kind, i, text))
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
