# SPDX-License-Identifier: GPL-3.0-or-later
"""Load a plan QuantLab exported for NVIDIA Model Optimizer (`quantlab-cli recipe export --as modelopt`).

    from modelopt_plan import load_modelopt_plan          # scripts/ on sys.path
    config = load_modelopt_plan("plan.json")
    model = mtq.quantize(model, config, forward_loop)

JSON has no tuples and no integer keys, so the file holds num_bits / scale_bits as lists and the
block axis as the string "-1". Model Optimizer's QuantizerAttributeConfig asserts that string
block_sizes keys are one of "type", "scale_bits", "scale_block_sizes", so the keys must become
ints again; the lists become tuples as its own presets (NVFP4_DEFAULT_CFG ...) hold them.
Pure Python, no dependencies: python3 scripts/modelopt_plan.py plan.json prints the config.
"""
import json
import sys


def _tuples(cfg):
    out = dict(cfg)
    if isinstance(out.get("num_bits"), list):
        out["num_bits"] = tuple(out["num_bits"])
    if isinstance(out.get("block_sizes"), dict):
        bs = {}
        for k, v in out["block_sizes"].items():
            key = int(k) if isinstance(k, str) and k.lstrip("-").isdigit() else k
            bs[key] = tuple(v) if isinstance(v, list) else v
        out["block_sizes"] = bs
    return out


def modelopt_plan_from_json(doc):
    """The mtq.quantize config for a parsed plan document ({"quant_cfg": [...], "algorithm": ...})."""
    entries = []
    for e in doc["quant_cfg"]:
        e = dict(e)
        if isinstance(e.get("cfg"), dict):
            e["cfg"] = _tuples(e["cfg"])
        entries.append(e)
    return {"quant_cfg": entries, "algorithm": doc.get("algorithm", "max")}


def load_modelopt_plan(path):
    with open(path) as f:
        return modelopt_plan_from_json(json.load(f))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: modelopt_plan.py PLAN.json")
    print(load_modelopt_plan(sys.argv[1]))
