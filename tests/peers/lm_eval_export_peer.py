# SPDX-License-Identifier: GPL-3.0-or-later
"""lm-evaluation-harness scores QuantLab's lm-eval export as QuantLab's checker does
(tests/engine/lm_eval_export_test.cpp).

    python lm_eval_export_peer.py EXPORT_DIR GROUP CASES_JSON

EXPORT_DIR holds what export_lm_eval_tasks wrote; CASES_JSON lists {"id", "output", "passed",
"system", "user"}: an item's generated text, QuantLab's verdict on it, and the conversation
QuantLab's runner sends. Here lm-eval's own code (TaskManager loading the YAML, the datasets json
loader, fewshot_context with a chat template, the tasks' filter ensembles and process_results
with exact_match and its kwargs) must
1. build each exported document's conversation exactly as QuantLab's (system message only when
   there is one), and
2. give exact_match 1.0 exactly where QuantLab passed the output, 0.0 where it failed.
Exit 1 on a mismatch; any exception (a peer that cannot run) fails too.
"""
import json
import os
import sys

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402


def main():
    export_dir, group, cases_path = sys.argv[1:4]
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    by_id = {}
    for case in cases:
        by_id.setdefault(case["id"], []).append(case)
    manager = TaskManager(include_path=export_dir, include_defaults=False)
    tasks = list(manager.load([group])["tasks"].values())
    failures, checked, prompts = [], 0, 0
    seen = set()
    for task in tasks:
        for doc in task.test_docs():
            seen.add(doc["id"])
            messages = task.fewshot_context(doc, 0, apply_chat_template=True, chat_template=lambda m, **kw: json.dumps(m))
            messages = json.loads(messages)
            for case in by_id.get(doc["id"], []):
                want = ([{"role": "system", "content": case["system"]}] if case["system"] else []) + [
                    {"role": "user", "content": case["user"]}]
                if messages != want:
                    failures.append(f"{doc['id']}: lm-eval prompts {messages!r}, QuantLab {want!r}")
                prompts += 1
                # As lm_eval.evaluator does: the response through each filter ensemble, then
                # process_results on the filtered response.
                for ensemble in task._filters:
                    instance = Instance("generate_until", doc, ("", {}), 0, resps=[case["output"]])
                    ensemble.apply([instance])
                    result = task.process_results(doc, [instance.filtered_resps[ensemble.name]])
                    score = result["exact_match"]
                    checked += 1
                    if score != (1.0 if case["passed"] else 0.0):
                        failures.append(f"{doc['id']}: output {case['output']!r}: lm-eval exact_match {score}, QuantLab passed={case['passed']}")
    missing = set(by_id) - seen
    if missing:
        failures.append(f"not in the export: {sorted(missing)}")
    for line in failures:
        print("MISMATCH", line)
    print(f"{len(tasks)} tasks, {checked} outputs scored, {prompts} prompts compared")
    if failures or checked == 0:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
