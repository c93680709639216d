#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes gpu-check-results.json and gpu-check-results.md from what scripts/gpu-check left in its
log folder: steps.tsv (step, status, seconds, note), toolchain.tsv, gpu.txt, the gtest XML of each
test suite, qad-<precision>.json (train --json) and OUT/cuda-bench.json.

    gpu_check_results.py LOG_DIR OUT_DIR [--no-gpu-ok]

Exit 3 when a test that needs the GPU was skipped (a *Gpu suite, or any CUDA kernel test: those
skip only when CUDA sees no device) and --no-gpu-ok was not given: on the GPU machine that means
the check did not check. Other skips are expected there (CliDevice.SaysWhyCudaIsUnavailable...
skips where CUDA works)."""
import json
import os
import sys
import xml.etree.ElementTree as ET

BENCH_GOAL = 0.7  # fake quant at >= 0.7x a device-to-device memcpy (docs/BENCHMARKS.md)


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def suite_counts(xml_path, needs_gpu_everywhere):
    """Tests, failures, skips and the skipped tests that needed the GPU, from one gtest XML."""
    counts = {"tests": 0, "passed": 0, "failed": 0, "skipped": 0, "gpu_skipped": [], "failures": []}
    root = ET.parse(xml_path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        counts["tests"] += 1
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
            counts["failures"].append(name)
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            counts["skipped"] += 1
            if needs_gpu_everywhere or case.get("classname", "").endswith("Gpu"):
                counts["gpu_skipped"].append(name)
        else:
            counts["passed"] += 1
    return counts


def qad_summary(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    after = report.get("after") or {}
    before = report.get("before") or {}
    steps, seconds = report.get("steps"), report.get("seconds")
    return {
        "steps": steps,
        "seconds": seconds,
        "steps_per_s": round(steps / seconds, 2) if steps and seconds else None,
        "final_loss": report.get("final_loss"),
        "kl_before": before.get("kl"),
        "kl_after": after.get("kl"),
        "exact_match_after": after.get("exact_match"),
    }


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    logs, out = sys.argv[1], sys.argv[2]
    allow_no_gpu = "--no-gpu-ok" in sys.argv[3:]
    results = {
        "dry_run_without_gpu": allow_no_gpu,
        "gpu": open(os.path.join(logs, "gpu.txt")).read().strip() if os.path.exists(os.path.join(logs, "gpu.txt")) else "none",
        "toolchain": {row[0]: row[1] for row in read_tsv(os.path.join(logs, "toolchain.tsv")) if len(row) > 1},
        "steps": [{"step": r[0], "status": r[1], "seconds": float(r[2]), "note": r[3] if len(r) > 3 else ""}
                  for r in read_tsv(os.path.join(logs, "steps.tsv"))],
        "tests": {},
        "bench": None,
        "qad": {},
    }
    for suite in ("kernels-cuda", "engine-device", "cli-device"):
        xml_path = os.path.join(logs, suite + ".xml")
        if os.path.exists(xml_path):
            results["tests"][suite] = suite_counts(xml_path, needs_gpu_everywhere=suite == "kernels-cuda")
    bench_path = os.path.join(out, "cuda-bench.json")
    if os.path.exists(bench_path):
        with open(bench_path) as f:
            bench = json.load(f)
        rows = bench.get("results", [])
        results["bench"] = {
            "device": bench.get("device"),
            "copy_gbps": bench.get("copy_gbps"),
            "goal": BENCH_GOAL,
            "below_goal": [f"{r['format']} {r['op']}" for r in rows if r["ratio_to_copy"] < BENCH_GOAL],
            "results": rows,
        }
    for precision in ("fp32", "bf16"):
        summary = qad_summary(os.path.join(logs, f"qad-{precision}.json"))
        if summary:
            results["qad"][precision] = summary

    gpu_skipped = [t for c in results["tests"].values() for t in c["gpu_skipped"]]
    results["passed"] = (all(s["status"] != "failed" for s in results["steps"])
                         and (allow_no_gpu or not gpu_skipped))
    with open(os.path.join(out, "gpu-check-results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "gpu-check-results.md"), "w") as f:
        f.write(markdown(results, gpu_skipped))
    print(f"results: {os.path.join(out, 'gpu-check-results.md')}")
    if gpu_skipped and not allow_no_gpu:
        print(f"FAILED: {len(gpu_skipped)} tests that need the GPU were skipped (CUDA sees no usable device?): "
              + ", ".join(gpu_skipped[:5]))
        sys.exit(3)


def markdown(r, gpu_skipped):
    lines = ["# gpu-check results", ""]
    lines.append(f"GPU: {r['gpu']}" + ("  (dry run without a GPU: --no-gpu-ok)" if r["dry_run_without_gpu"] else ""))
    tc = r["toolchain"]
    lines += [f"nvcc {tc.get('nvcc', '?')}, CUDA archs {tc.get('archs', '?')}, torch {tc.get('torch', '?')}, "
              f"{tc.get('jobs', '?')} jobs", "", "| step | status | seconds | note |", "|---|---|---|---|"]
    lines += [f"| {s['step']} | {s['status']} | {s['seconds']:.1f} | {s['note']} |" for s in r["steps"]]
    total = sum(s["seconds"] for s in r["steps"])
    lines += [f"| total | | {total:.1f} | |", "", "| tests | total | passed | failed | skipped | GPU tests skipped |",
              "|---|---|---|---|---|---|"]
    for name, c in r["tests"].items():
        lines.append(f"| {name} | {c['tests']} | {c['passed']} | {c['failed']} | {c['skipped']} | {len(c['gpu_skipped'])} |")
    for name, c in r["tests"].items():
        for t in c["failures"]:
            lines.append(f"\nFailed: {name}: {t}")
    if gpu_skipped:
        shown = ", ".join(gpu_skipped[:5]) + (f" and {len(gpu_skipped) - 5} more" if len(gpu_skipped) > 5 else "")
        why = "accepted: dry run without a GPU" if r["dry_run_without_gpu"] else "CUDA saw no usable device"
        lines.append(f"\n{len(gpu_skipped)} tests that need the GPU were skipped ({why}): {shown}")
    lines.append("")
    b = r["bench"]
    if b:
        lines += [f"Benchmark on {b['device']}: device memcpy {b['copy_gbps']:.1f} GB/s; goal >= {b['goal']}x copy",
                  "", "| format | op | ms | GB/s | x copy |", "|---|---|---|---|---|"]
        lines += [f"| {x['format']} | {x['op']} | {x['ms']:.3f} | {x['gbps']:.1f} | {x['ratio_to_copy']:.2f} |"
                  for x in b["results"]]
        lines.append(f"\nBelow the goal: {', '.join(b['below_goal']) or 'none'}")
    else:
        lines.append("Benchmark: not run (no CUDA device)")
    lines.append("")
    if r["qad"]:
        lines += ["| QAD of the demo | steps | seconds | steps/s | final loss | KL before | KL after | exact match after |",
                  "|---|---|---|---|---|---|---|---|"]
        def g(v, fmt):
            return "–" if v is None else format(v, fmt)
        for precision, q in r["qad"].items():
            lines.append(f"| {precision} | {q['steps']} | {g(q['seconds'], '.1f')} | {g(q['steps_per_s'], '.2f')} | "
                         f"{g(q['final_loss'], '.4g')} | {g(q['kl_before'], '.4g')} | {g(q['kl_after'], '.4g')} | "
                         f"{g(q['exact_match_after'], '.4f')} |")
    else:
        lines.append("QAD: not run")
    lines += ["", f"Overall: {'PASSED' if r['passed'] else 'FAILED'}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
