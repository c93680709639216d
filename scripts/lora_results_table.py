#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tables of docs/RESULTS.md "LoRA and QLoRA" from the runs scripts/lora-results made.

    scripts/lora_results_table.py WORKDIR SEED...

Each cell is the mean over the seeds and the half-width of its 95 % t-interval (mean ± t(0.975,
n−1) · s / √n, Student's t as engine/experiments/experiment_statistics.cpp computes it)."""
import json
import math
import os
import sys

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def ci(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    n = len(values)
    m = sum(values) / n
    if n == 1:
        return f"{m:.4g}"
    s = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return f"{m:.4g} ± {T975[n - 1] * s / math.sqrt(n):.2g}"


def load(work, name, seeds):
    runs = []
    for s in seeds:
        d = os.path.join(work, f"{name}-s{s}")
        if not os.path.isfile(os.path.join(d, "train_report.json")):
            continue
        r = json.load(open(os.path.join(d, "train_report.json")))
        p = os.path.join(work, f"{name}-s{s}.preview.json")
        r["_preview"] = json.load(open(p)) if os.path.isfile(p) else None
        w = os.path.join(work, f"{name}-s{s}.wall")
        r["_wall"] = float(open(w).read()) if os.path.isfile(w) else None
        runs.append(r)
    return runs


def trainable(r):
    return r.get("trainable_parameters", r.get("parameters"))


def main():
    work, seeds = sys.argv[1], sys.argv[2:]
    sft = [("QLoRA (NF4 + DQ), default init", "qlora"), ("QLoRA (NF4 + DQ), LoftQ (2 iterations)", "qlora-loftq"),
           ("LoRA on the FP base", "lora-fp"), ("full fine-tuning", "full")]
    print(f"\n### Fine-tuning on train.txt ({len(seeds)} seeds; perplexity on eval.txt, transformers' windows)\n")
    print("| method | trainable parameters | ppl before | ppl after | train s | init s | merge: codes changed % "
          "| preview: adapted ppl | merged re-quantized ppl | merged FP ppl | KL(adapted ‖ re-quantized) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    fp_ppl = None
    for label, name in sft:
        runs = load(work, name, seeds)
        if not runs:
            continue
        fp_ppl = fp_ppl or runs[0]["teacher"]["ppl"]
        pv = [r["_preview"] for r in runs if r["_preview"]]
        cells = [label, f"{trainable(runs[0]):,}", ci([r["before"]["ppl"] for r in runs]),
                 ci([r["after"]["ppl"] for r in runs]), ci([r["seconds"] for r in runs]),
                 ci([r.get("init_seconds") for r in runs]),
                 ci([100 * p["codes_changed"] for p in pv if p.get("codes_changed") is not None]) if pv else "–",
                 ci([p["adapted"]["ppl"] for p in pv]) if pv else "–",
                 ci([p["merged_requantized"]["ppl"] for p in pv]) if pv else "–",
                 ci([p["merged_fp"]["ppl"] for p in pv]) if pv else "–",
                 ci([p["merged_requantized"]["kl"] for p in pv]) if pv else "–"]
        print("| " + " | ".join(cells) + " |")
    print("\nppl before / after: the run's own evaluation (the validation split of eval.txt, as training reports "
          "it); the preview columns: `quantlab-cli lora preview` on the first windows of the whole eval.txt, so "
          "compare the merged models with the preview's adapted model, not with \"ppl after\".")
    if fp_ppl:
        print(f"\nThe dequantized Q4_1 model (the FP base) before any training: perplexity {fp_ppl:.4f}.")
    loftq = load(work, "qlora-loftq", seeds)
    if loftq and loftq[0].get("loftq_error") is not None:
        print(f"LoftQ: mean relative weight error ‖W − Q‖/‖W‖ {ci([r['loftq_base_error'] for r in loftq])} of the NF4 base "
              f"-> ‖W − (Q + sBA)‖/‖W‖ {ci([r['loftq_error'] for r in loftq])} at the start.")

    qad = [("NVFP4 (W4A4)", "lora-qad-nvfp4", "qad-nvfp4"), ("INT4 g64 (W4A16)", "lora-qad-int4", "qad-int4")]
    print(f"\n### Recovery of the quantization error: LoRA-QAD vs QAD of all weights ({len(seeds)} seeds; KL to the FP "
          "model on eval.txt)\n")
    print("| base | method | trainable parameters | KL before | KL after | recovered % | recovery per million "
          "trainable parameters (% / M) | train s | merge: codes changed % | KL(adapted ‖ re-quantized) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for base, lora_name, qad_name in qad:
        for method, name in (("LoRA-QAD (rank 8)", lora_name), ("QAD, all weights", qad_name)):
            runs = load(work, name, seeds)
            if not runs:
                continue
            n = trainable(runs[0])
            rec = [100 * (1 - r["after"]["kl"] / r["before"]["kl"]) for r in runs]
            pv = [r["_preview"] for r in runs if r["_preview"]]
            cells = [base, method, f"{n:,}", ci([r["before"]["kl"] for r in runs]),
                     ci([r["after"]["kl"] for r in runs]), ci(rec), ci([v / (n / 1e6) for v in rec]),
                     ci([r["seconds"] for r in runs]),
                     ci([100 * p["codes_changed"] for p in pv]) if pv else "–",
                     ci([p["merged_requantized"]["kl"] for p in pv]) if pv else "–"]
            print("| " + " | ".join(cells) + " |")

    suites(work, seeds, sft)


def suites(work, seeds, sft):
    """The eval suite on the fine-tuned models (LORA_SUITE): success per category against the FP
    model, verdict flips paired on items, and the logit metrics on eval.txt."""
    folder = os.path.join(work, "suites")
    fp_path = os.path.join(folder, "fp.json")
    if not os.path.isfile(fp_path):
        return
    fp = json.load(open(fp_path))
    fp_items = {i["id"]: i for i in fp["replicates"][0]["items"]}
    cats = sorted({i["category"] for i in fp_items.values()})

    def rate(run, cat=None):
        items = [i for i in run["replicates"][0]["items"] if cat is None or i["category"] == cat]
        return 100 * sum(i["passed"] for i in items) / len(items)

    counts = ", ".join(f"{c} {sum(i['category'] == c for i in fp_items.values())}" for c in cats)
    print(f"\n### The eval suite after fine-tuning ({len(fp_items)} items of the default suite: {counts}; "
          "greedy; success % over the seeds)\n")
    print("| model | " + " | ".join(cats) + " | overall | right→wrong vs FP | wrong→right vs FP | ppl (eval.txt) | KL to FP |")
    print("|---|" + "---|" * (len(cats) + 5))
    fp_cells = ["FP (the dequantized Q4_1 model)"] + [f"{rate(fp, c):.1f}" for c in cats] + [f"{rate(fp):.1f}", "–", "–",
                f"{fp['logits']['ppl']:.4g}" if fp.get("logits") else "–", "–"]
    print("| " + " | ".join(fp_cells) + " |")
    for label, name in sft:
        runs = [json.load(open(os.path.join(folder, f"{name}-s{s}.json"))) for s in seeds
                if os.path.isfile(os.path.join(folder, f"{name}-s{s}.json"))]
        if not runs:
            continue
        lost = [sum(1 for i in r["replicates"][0]["items"] if fp_items[i["id"]]["passed"] and not i["passed"]) for r in runs]
        won = [sum(1 for i in r["replicates"][0]["items"] if not fp_items[i["id"]]["passed"] and i["passed"]) for r in runs]
        logits = [r.get("logits") or {} for r in runs]
        cells = [f"{label} ({len(runs)} seeds)"] + [ci([rate(r, c) for r in runs]) for c in cats] + [
            ci([rate(r) for r in runs]), ci(lost), ci(won), ci([l.get("ppl") for l in logits]),
            ci([l.get("kl_mean") for l in logits])]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
