# SPDX-License-Identifier: GPL-3.0-or-later
"""transformers renders Qwen2.5's chat template as QuantLab folds tools into the system message
(tests/engine/tool_prompt_test.cpp).

    python tool_prompt_peer.py CASES_JSON

CASES_JSON lists {"messages", "tools", "folded"}: an item's conversation and tools, and QuantLab's
conversation_with_tools_in_system(item, QWEN_DEFAULT_SYSTEM). With transformers'
render_jinja_template (its `tojson` filter) and Qwen2.5-7B-Instruct's chat template (the copy in
the llama.cpp sources that scripts/setup-peers unpacks, models/templates/), the prompt of
(messages, tools=tools) must equal, character for character, the prompt of (folded, no tools).
Exit 1 on a mismatch; any exception (a peer that cannot run) fails too.
"""
import json
import os
import sys

import llama_cpp
from transformers.utils.chat_template_utils import render_jinja_template


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    src = os.path.expanduser(f"~/.cache/quantlab/llama-cpp-python-src/llama_cpp_python-{llama_cpp.__version__}")
    path = os.path.join(src, "vendor", "llama.cpp", "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja")
    with open(path, encoding="utf-8") as f:
        template = f.read()
    failures = 0
    for k, case in enumerate(cases):
        with_tools = render_jinja_template([case["messages"]], tools=case["tools"], chat_template=template,
                                           add_generation_prompt=True)[0][0]
        folded = render_jinja_template([case["folded"]], chat_template=template, add_generation_prompt=True)[0][0]
        if with_tools != folded:
            failures += 1
            print(f"MISMATCH case {k}:\n--- transformers with tools ---\n{with_tools}\n--- QuantLab folded ---\n{folded}")
    print(f"{len(cases)} cases compared")
    if failures or not cases:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
