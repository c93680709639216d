# SPDX-License-Identifier: GPL-3.0-or-later
"""lm-evaluation-harness answers and scores the exported suite as QuantLab's runner does
(tests/app/cli_evalsuite_peer_test.cpp).

    python lm_eval_runner_peer.py HF_FOLDER EXPORT_DIR GROUP QUANTLAB_JSON

HF_FOLDER: the FP32 model folder `quantlab-cli convert` wrote; EXPORT_DIR / GROUP: the tasks
`quantlab-cli evalsuite --lm-eval-export` wrote; QUANTLAB_JSON: what `quantlab-cli evalsuite
HF_FOLDER --json` printed for the same items. lm-eval 0.4.13's own evaluator (simple_evaluate
with its HF backend on the CPU in float32, the model's chat template, greedy generate_until,
the tasks' filters and exact_match) must give, for every exported item,
1. the same generated text as QuantLab (greedy: token for token), and
2. exact_match 1.0 exactly where QuantLab passed the item.
Offline: nothing is downloaded. Exit 1 on a mismatch; any exception (a peer that cannot run)
fails too.
"""
import json
import os
import sys

os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402


def main():
    hf_folder, export_dir, group, quantlab_json = sys.argv[1:5]
    torch.manual_seed(0)
    with open(quantlab_json, encoding="utf-8") as f:
        quantlab = json.load(f)
    items = {o["id"]: o for o in quantlab["runs"][0]["replicates"][0]["items"]}
    manager = TaskManager(include_path=export_dir, include_defaults=False)
    results = simple_evaluate(
        model="hf",
        model_args=f"pretrained={hf_folder},dtype=float32",
        tasks=[group],
        task_manager=manager,
        apply_chat_template=True,
        log_samples=True,
        batch_size=1,
        device="cpu",
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
    )
    failures, compared = [], 0
    for task, samples in results["samples"].items():
        for s in samples:
            item_id = s["doc"]["id"]
            if item_id not in items:
                failures.append(f"{task}: {item_id} was not run by QuantLab")
                continue
            ours = items[item_id]
            text = s["resps"][0][0]
            if text != ours["output"]:
                failures.append(f"{item_id}: lm-eval generated {text!r}, QuantLab {ours['output']!r}")
            score = s["exact_match"]
            if score != (1.0 if ours["passed"] else 0.0):
                failures.append(f"{item_id}: lm-eval exact_match {score} on {s['filtered_resps']!r}, QuantLab passed={ours['passed']}")
            compared += 1
            print(f"{item_id}: {text!r} exact_match {score}")
    for line in failures:
        print("MISMATCH", line)
    print(f"{compared} items compared")
    if failures or compared == 0:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
