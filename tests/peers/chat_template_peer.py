# SPDX-License-Identifier: GPL-3.0-or-later
"""Chat templates rendered by transformers' own Jinja environment against QuantLab's renderings.

tests/engine/chat_template_peer_test.cpp renders every template of a folder (llama.cpp's
models/templates) for every conversation of tests/data/chat_template_cases.json with
ql::ChatTemplate and writes the results to a JSON file; this script renders the same with
transformers.utils.chat_template_utils.render_jinja_template (the function apply_chat_template
calls, with its tojson, raise_exception, strftime_now and {% generation %}) after the input
preparation apply_chat_template does (None-valued message keys dropped), and requires byte
equality -- or, where transformers raises, that QuantLab raised too. Snippets (--snippets,
tests/data/chat_template_snippets.txt) exercise language corners the real templates do not reach;
random templates (--random, from chat_template_random.py) cover expressions, scoping and
whitespace control more broadly.

    chat_template_peer.py --cases CASES.json --templates DIR --results RESULTS.json [--snippets S.txt] [--random R.txt]

Prints PASS on the last line when everything agrees; exits 1 otherwise (and when the folder has no
templates).
"""
import argparse
import datetime as _datetime
import glob
import json
import os
import sys


def read_snippets(path: str) -> dict:
    """tests/data/chat_template_snippets.txt: "### name" lines start snippets; the newline before
    the next header is not part of a snippet; lines before the first header are comments."""
    snippets, name, lines = {}, None, []
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("### "):
            if name is not None:
                snippets[name] = "\n".join(lines)
            name, lines = line[4:].strip(), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        snippets[name] = "\n".join(lines[:-1] if lines and lines[-1] == "" else lines)
    return snippets


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--templates", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--snippets")
    ap.add_argument("--random", help="random templates (chat_template_random.py), rendered for the random_cases")
    a = ap.parse_args()

    from transformers.utils import chat_template_utils as ctu

    doc = json.load(open(a.cases, encoding="utf-8"))
    now = _datetime.datetime.fromisoformat(doc["now"])

    class FixedDatetime(_datetime.datetime):
        """strftime_now() reads chat_template_utils.datetime.now(): the cases fix the time."""

        @classmethod
        def now(cls, tz=None):
            return cls(now.year, now.month, now.day, now.hour, now.minute, now.second)

    ctu.datetime = FixedDatetime

    def render(source: str, case: dict) -> dict:
        # apply_chat_template: drop the None-valued keys of each message, then special tokens
        # overwritten by the caller's kwargs.
        messages = [{k: v for k, v in m.items() if v is not None} for m in case["messages"]]
        kwargs = {"bos_token": doc["bos_token"], "eos_token": doc["eos_token"]}
        kwargs.update(case.get("extra") or {})
        try:
            rendered, _ = ctu.render_jinja_template(
                conversations=[messages],
                tools=case.get("tools"),
                documents=None,
                chat_template=source,
                add_generation_prompt=case["add_generation_prompt"],
                **kwargs,
            )
            return {"ok": True, "text": rendered[0]}
        except Exception as e:  # the template (or Jinja) raised: QuantLab must raise too
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}

    ours = json.load(open(a.results, encoding="utf-8"))
    files = sorted(glob.glob(os.path.join(a.templates, "*.jinja")))
    if not files:
        print(f"no .jinja templates in {a.templates}")
        return 1
    sources = {os.path.basename(f): open(f, encoding="utf-8").read() for f in files}
    if a.snippets:
        for name, source in read_snippets(a.snippets).items():
            sources["snippet:" + name] = source
    if a.random:
        for name, source in read_snippets(a.random).items():
            sources["random:" + name] = source

    snippet_cases = set(doc.get("snippet_cases", []))
    random_cases = set(doc.get("random_cases", []))
    compared = rendered = raised = 0
    failures = []
    for name, source in sources.items():
        if name not in ours:
            failures.append(f"{name}: QuantLab has no results for it")
            continue
        for case in doc["cases"]:
            if name.startswith("snippet:") and case["name"] not in snippet_cases:
                continue
            if name.startswith("random:") and case["name"] not in random_cases:
                continue
            theirs = render(source, case)
            mine = ours[name].get(case["name"])
            compared += 1
            if mine is None:
                failures.append(f"{name} / {case['name']}: QuantLab has no result")
            elif theirs["ok"] != mine["ok"]:
                what = theirs.get("error") if not theirs["ok"] else mine.get("error")
                failures.append(
                    f"{name} / {case['name']}: transformers {'rendered' if theirs['ok'] else 'raised'}, "
                    f"QuantLab {'rendered' if mine['ok'] else 'raised'}: {what}"
                )
            elif theirs["ok"] and theirs["text"] != mine["text"]:
                t, m = theirs["text"], mine["text"]
                k = next((i for i in range(min(len(t), len(m))) if t[i] != m[i]), min(len(t), len(m)))
                failures.append(
                    f"{name} / {case['name']}: renderings differ at character {k}:\n"
                    f"    transformers: {t[max(0, k - 60):k + 60]!r}\n    QuantLab:     {m[max(0, k - 60):k + 60]!r}"
                )
            elif theirs["ok"]:
                rendered += 1
            else:
                raised += 1
    snippets = sum(1 for n in sources if n.startswith("snippet:"))
    randoms = sum(1 for n in sources if n.startswith("random:"))
    templates = len(sources) - snippets - randoms
    print(
        f"compared {compared} renderings: {templates} templates x {len(doc['cases'])} cases + "
        f"{snippets} snippets x {len(snippet_cases)} cases + {randoms} random templates x {len(random_cases)} cases; "
        f"{rendered} identical, {raised} raised on both sides, {len(failures)} disagree"
    )
    for f in failures:
        print("MISMATCH " + f)
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
