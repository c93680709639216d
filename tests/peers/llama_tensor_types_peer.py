# SPDX-License-Identifier: GPL-3.0-or-later
"""llama.cpp quantizes a GGUF with the arguments QuantLab exported (`recipe export --as llama-tensor-types`).

    python llama_tensor_types_peer.py CASE_DIR

CASE_DIR (written by tests/engine/plan_export_peer_test.cpp) holds model-f32.gguf (QuantLab's F32
GGUF of the model), plan.args (the export) and expected.json ({"tensors": {gguf name: ggml type
name}}: QuantLab's own per-layer plan, from QuantizedModel). There is no llama-quantize binary in
the peers venv, so the arguments go to the function it calls: llama_model_quantize of the libllama
llama-cpp-python built, with the --tensor-type patterns as tt_overrides (lower-cased, as
tools/quantize/quantize.cpp parse_tensor_type does) and --output-tensor-type as output_tensor_type.
The file is quantized to Q4_K_M twice, with and without the arguments, and read back with gguf-py:
every tensor of the plan must have the plan's type, and every other tensor the type llama.cpp
gives it without the arguments (the list changes nothing else). Exit 1 on a mismatch or when a
peer cannot run.
"""
import ctypes
import json
import os
import sys

Q4_K_M = 15  # llama.h LLAMA_FTYPE_MOSTLY_Q4_K_M


def parse_args_file(path, ggml_type):
    overrides, output = [], None
    words = open(path).read().split()
    if len(words) % 2:
        raise AssertionError(f"{path}: an option without a value")
    for option, value in zip(words[::2], words[1::2]):
        if option == "--tensor-type":
            pattern, _, t = value.partition("=")
            if not pattern or not t:
                raise AssertionError(f"{path}: malformed --tensor-type {value}")
            overrides.append((pattern.lower(), ggml_type(t)))
        elif option == "--output-tensor-type":
            output = ggml_type(value)
        else:
            raise AssertionError(f"{path}: unexpected option {option}")
    return overrides, output


def quantize(lc, src, dst, overrides, output):
    p = lc.llama_model_quantize_default_params()
    p.ftype = Q4_K_M
    p.nthread = 2
    keep = []
    if overrides:
        arr = (lc.llama_model_tensor_override * (len(overrides) + 1))()
        for k, (pattern, t) in enumerate(overrides):
            keep.append(ctypes.c_char_p(pattern.encode()))
            arr[k].pattern = keep[-1]
            arr[k].type = t
        arr[len(overrides)].pattern = None
        keep.append(arr)
        p.tt_overrides = ctypes.cast(arr, ctypes.POINTER(lc.llama_model_tensor_override))
    if output is not None:
        p.output_tensor_type = output
    if lc.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p)) != 0:
        raise RuntimeError(f"llama_model_quantize({src}) failed")


def main():
    import gguf
    import llama_cpp as lc

    case = sys.argv[1]
    lc.llama_backend_init()
    if not os.environ.get("QUANTLAB_CHECK_VERBOSE"):
        quiet = lc.llama_log_callback(lambda level, text, user: None)
        lc.llama_log_set(quiet, ctypes.c_void_p(0))

    def ggml_type(name):
        return int(gguf.GGMLQuantizationType[name.upper()])

    overrides, output = parse_args_file(os.path.join(case, "plan.args"), ggml_type)
    expected = json.load(open(os.path.join(case, "expected.json")))["tensors"]
    src = os.path.join(case, "model-f32.gguf")
    with_plan, without = os.path.join(case, "plan-q4_k_m.gguf"), os.path.join(case, "mix-q4_k_m.gguf")
    quantize(lc, src, with_plan, overrides, output)
    quantize(lc, src, without, [], None)
    got = {t.name: t.tensor_type.name for t in gguf.GGUFReader(with_plan).tensors}
    mix = {t.name: t.tensor_type.name for t in gguf.GGUFReader(without).tensors}
    problems = []
    for name, t in expected.items():
        if got.get(name) != t:
            problems.append(f"{name}: llama.cpp wrote {got.get(name)}, the plan says {t}")
    changed = 0
    for name, t in got.items():
        if name in expected:
            changed += mix.get(name) != t
        elif mix.get(name) != t:
            problems.append(f"{name}: not in the plan, but {t} with the arguments and {mix.get(name)} without")
    print(f"llama.cpp Q4_K_M with {len(overrides)} --tensor-type (+ output {output is not None}): {len(expected)} planned "
          f"tensors ({changed} differ from the plain mix), {len(got) - len(expected)} others; {len(problems)} mismatch(es)")
    for p in problems:
        print("  MISMATCH " + p)
    print("PASS" if not problems else "FAILED")
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
