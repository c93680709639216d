# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA Model Optimizer applies a plan QuantLab exported (`recipe export --as modelopt`).

    python modelopt_plan_peer.py CASE_DIR...

Each CASE_DIR (written by tests/engine/plan_export_peer_test.cpp) holds:
  plan.json      the export (engine/export/modelopt_plan.h), loaded with scripts/modelopt_plan.py
  expected.json  {"model": HF folder, "arch": "bert" | "llama", "layers": {layer: {"weight": Q | null,
                 "input": Q | null}}} with Q = {"format", "granularity", "block", "axis", "dynamic"}:
                 QuantLab's own per-layer plan (the recipe resolved by QuantizedModel, not the export);
                 or "recipe": a recipe of exact per-layer entries (an experiment's mixed run's plan,
                 as the project recorded it), read here (tests/app/cli_experiment_test.cpp)
The HF model is built with transformers, mtq.quantize(model, config, forward_loop) calibrates it on
a few batches, and then for EVERY nn.Linear of the model: a layer of QuantLab's plan has its weight
and input quantizers enabled exactly where the plan has them, with the num_bits, block_sizes, axis
and narrow_range the plan's format means in Model Optimizer's terms (the table below, written from
Model Optimizer's presets, not from our exporter), and a calibrated amax wherever the quantizer is
static; a Linear outside the plan (or a layer the plan keeps in BF16) has both quantizers disabled,
and so has every other quantizer Model Optimizer inserted (attention BMM quantizers ...).
Exit 1 with the mismatches; any exception (a peer that cannot run) fails too.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

import torch  # noqa: E402
import modelopt.torch.quantization as mtq  # noqa: E402
from modelopt_plan import load_modelopt_plan  # noqa: E402
from modelopt.torch.quantization.nn import TensorQuantizer  # noqa: E402

FLOAT_BITS = {"nvfp4": (2, 1), "fp8_e4m3": (4, 3), "mxfp8_e4m3": (4, 3), "mxfp8_e5m2": (5, 2),
              "mxfp6_e3m2": (3, 2), "mxfp6_e2m3": (2, 3), "mxfp4": (2, 1), "mxint8": 8}


def expected_attrs(q):
    """What Model Optimizer's quantizer must hold for QuantLab quantizer settings q."""
    f = q["format"]
    if f == "nvfp4":  # NVFP4_DEFAULT_CFG
        return {"num_bits": (2, 1), "block_sizes": {-1: 16, "type": "dynamic", "scale_bits": (4, 3)}, "axis": None,
                "static_amax": True}
    if f.startswith("mx"):  # MXFP4_DEFAULT_CFG, MXFP8_DEFAULT_CFG, MXINT8_DEFAULT_CFG: no amax at all
        return {"num_bits": FLOAT_BITS[f], "block_sizes": {-1: 32, "type": "dynamic", "scale_bits": (8, 0)}, "axis": None,
                "static_amax": False}
    if f == "fp8_e4m3":  # FP8_DEFAULT_CFG
        return {"num_bits": (4, 3), "block_sizes": None, "axis": q["axis"] if q["granularity"] == "channel" else None,
                "static_amax": not q["dynamic"]}
    if f.startswith("int"):  # INT4_AWQ_CFG (groups), INT8_DEFAULT_CFG (channel / tensor)
        bs = {-1: q["block"], "type": "static"} if q["granularity"] == "group" else None
        return {"num_bits": int(f[3:]), "block_sizes": bs, "axis": q["axis"] if q["granularity"] == "channel" else None,
                "narrow_range": True, "static_amax": not q["dynamic"]}
    raise AssertionError(f"format {f} is not in the peer's table")


def layers_from_recipe(recipe):
    """QuantLab's per-layer plan from a recipe of exact quantizer names after a "*" disable (an
    experiment's mixed-precision plan, as the run recorded it; the format's own defaults otherwise)."""
    layers = {}
    for e in recipe["quant_cfg"]:
        name = e["quantizer_name"]
        if name == "*":
            assert e.get("enable") is False, "the plan's '*' entry must disable"
            continue
        if any(c in name for c in "*?["):
            raise AssertionError(f"{name}: the peer reads a plan of exact per-layer entries only")
        layer, _, which = name.rpartition(".")
        which = {"weight_quantizer": "weight", "input_quantizer": "input"}[which]
        entry = layers.setdefault(layer, {"weight": None, "input": None})
        cfg = e.get("cfg")
        if e.get("enable", True) is False or not cfg:
            entry[which] = None
            continue
        f = cfg["format"]
        block = f == "nvfp4" or f.startswith("mx")
        entry[which] = {"format": f, "granularity": cfg.get("granularity", "block" if block else "tensor"),
                        "block": cfg.get("group_size", 0), "axis": cfg.get("axis", 0), "dynamic": cfg.get("dynamic", False)}
    return layers


def build(exp):
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer
    torch.manual_seed(0)
    if exp["arch"] == "bert":
        model = AutoModel.from_pretrained(exp["model"], dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained(exp["model"])
        texts = ["The quick brown fox jumps over the lazy dog.", "Quantization keeps the plan layer by layer.",
                 "A sentence embedding model maps text to vectors.", "Model Optimizer calibrates the amax."]
        batches = [tok(texts[i:i + 2], return_tensors="pt", padding=True) for i in range(0, len(texts), 2)]
        return model, lambda m: [m(**b) for b in batches]
    model = AutoModelForCausalLM.from_pretrained(exp["model"], dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    batches = [torch.randint(0, vocab, (2, 12)) for _ in range(3)]
    return model, lambda m: [m(input_ids=b) for b in batches]


def plan_layer(name, layers):
    """QuantLab's layer for module `name` (exact, or under a wrapper prefix)."""
    for layer in layers:
        if name == layer or name.endswith("." + layer):
            return layer
    return None


def check_quantizer(where, tq, q, problems):
    if q is None:
        if tq.is_enabled:
            problems.append(f"{where}: enabled, the plan has it off")
        return
    if not tq.is_enabled:
        problems.append(f"{where}: disabled, the plan has {q['format']}")
        return
    want = expected_attrs(q)
    got_bs = dict(tq.block_sizes) if tq.block_sizes is not None else None
    if tq.num_bits != want["num_bits"]:
        problems.append(f"{where}: num_bits {tq.num_bits}, the plan's {q['format']} is {want['num_bits']}")
    if got_bs != want["block_sizes"]:
        problems.append(f"{where}: block_sizes {got_bs}, the plan's {q['format']} is {want['block_sizes']}")
    if want["block_sizes"] is None and tq.axis != want["axis"]:
        problems.append(f"{where}: axis {tq.axis}, the plan's is {want['axis']}")
    if "narrow_range" in want and tq.narrow_range != want["narrow_range"]:
        problems.append(f"{where}: narrow_range {tq.narrow_range}, QuantLab clamps to +-(2^(N-1) - 1)")
    has_amax = getattr(tq, "amax", None) is not None
    if want["static_amax"] != has_amax:
        problems.append(f"{where}: amax {'set' if has_amax else 'missing'} after calibration, the plan's "
                        f"{q['format']} is {'static' if want['static_amax'] else 'dynamic'}")


def check_case(case_dir):
    exp = json.load(open(os.path.join(case_dir, "expected.json")))
    config = load_modelopt_plan(os.path.join(case_dir, "plan.json"))
    model, forward_loop = build(exp)
    model = mtq.quantize(model, config, forward_loop)
    layers = exp["layers"] if "layers" in exp else layers_from_recipe(exp["recipe"])
    problems, seen, counts = [], set(), {"quantized": 0, "bf16": 0, "outside": 0}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if not hasattr(module, "weight_quantizer"):
            problems.append(f"{name}: Model Optimizer did not convert this Linear")
            continue
        layer = plan_layer(name, layers)
        plan = layers[layer] if layer else {"weight": None, "input": None}
        if layer:
            seen.add(layer)
            counts["quantized" if plan["weight"] else "bf16"] += 1
        else:
            counts["outside"] += 1
        check_quantizer(f"{name}.weight_quantizer", module.weight_quantizer, plan["weight"], problems)
        check_quantizer(f"{name}.input_quantizer", module.input_quantizer, plan["input"], problems)
    # Every other quantizer Model Optimizer inserted (attention BMM / KV-cache quantizers, ...)
    # stays off: the plan enables nothing beyond its layers.
    linear = {n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    for name, module in model.named_modules():
        if isinstance(module, TensorQuantizer) and name.rsplit(".", 1)[0] not in linear and module.is_enabled:
            problems.append(f"{name}: enabled, but it belongs to no Linear of the plan")
    for layer in layers:
        if layer not in seen:
            problems.append(f"{layer}: in QuantLab's plan but no Linear of the HF model has that name")
    print(f"{os.path.basename(case_dir)}: {exp['arch']} {exp['model']}: {counts['quantized']} quantized, {counts['bf16']} "
          f"kept in BF16, {counts['outside']} outside the plan; {len(problems)} mismatch(es)")
    for p in problems:
        print("  MISMATCH " + p)
    return not problems


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: modelopt_plan_peer.py CASE_DIR...")
    ok = all([check_case(d) for d in sys.argv[1:]])
    print("PASS" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
