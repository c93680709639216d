#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write tests/data/safetensors/: a safetensors file made by the real peer, and what it holds.

Peers (exact versions): safetensors 0.8.0 (huggingface/safetensors, Rust serializer behind
safetensors.numpy.save_file and safetensors.serialize), numpy 2.4.6, ml_dtypes 0.6.0 (the
bfloat16 / float8 / float4 numpy dtypes, used for values and their float32 conversions).
No torch needed.

Run (venv outside the repository):
    python3 -m venv /work/peers-venv-st
    /work/peers-venv-st/bin/pip install -r scripts/golden/requirements-safetensors.txt
    /work/peers-venv-st/bin/python scripts/golden/make_safetensors_golden.py

Output (deterministic, fixed seed; about 20 KB):
  golden.safetensors       every dtype safetensors.numpy accepts, plus F4 (packed, written
                           through safetensors.serialize with a TensorSpec), a scalar and an
                           empty tensor; metadata {"format": "pt"} (one key, so that the header
                           is byte-exact: the peer keeps metadata in a hash map)
  golden_manifest.json     per tensor, as safetensors.deserialize reports it: dtype, shape,
                           data_offsets, and the bytes numpy holds (hex); the metadata
  expected/<name>.npy      float32 values of every floating-point tensor, converted by
                           numpy / ml_dtypes (NaN and Inf included)
tests/engine/safetensors_golden_test.cpp reads all three.
"""
import json
import os
import sys

import ml_dtypes
import numpy as np
import safetensors
from safetensors import TensorSpec, deserialize, serialize
from safetensors.numpy import save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "safetensors")


def codes(dtype):
    """All 256 byte codes of an 8-bit float type, as that type, shape [16, 16]."""
    return np.arange(256, dtype=np.uint8).reshape(16, 16).view(dtype)


def main():
    rng = np.random.default_rng(20240611)
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    tensors = {
        "model.f32": f32,
        "model.f32_special": np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38], dtype=np.float32),
        "model.f16": rng.standard_normal((2, 3, 5)).astype(np.float16),
        "model.bf16": rng.standard_normal((4, 8)).astype(np.float32).astype(ml_dtypes.bfloat16),
        "model.f64": rng.standard_normal(5),
        "model.i8": rng.integers(-128, 128, (2, 7), dtype=np.int8),
        "model.u8": rng.integers(0, 256, (9,), dtype=np.uint8),
        "model.i16": rng.integers(-(2**15), 2**15, (3,), dtype=np.int16),
        "model.u16": rng.integers(0, 2**16, (3,), dtype=np.uint16),
        "model.i32": rng.integers(-(2**31), 2**31, (2, 2), dtype=np.int32),
        "model.u32": rng.integers(0, 2**32, (2,), dtype=np.uint32),
        "model.i64": np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),
        "model.u64": np.array([0, 2**64 - 1], dtype=np.uint64),
        "model.bool": np.array([True, False, True, True, False]),
        "model.c64": np.array([1 + 2j, -0.5j], dtype=np.complex64),
        "model.f8_e4m3": codes(ml_dtypes.float8_e4m3fn),
        "model.f8_e5m2": codes(ml_dtypes.float8_e5m2),
        "model.f8_e8m0": codes(ml_dtypes.float8_e8m0fnu),
        "model.scalar": np.array(2.5, dtype=np.float32),
        "model.empty": np.zeros((0, 3), dtype=np.float32),
    }
    metadata = {"format": "pt"}
    # Everything numpy can hold goes through the peer's numpy front end ...
    blob = save(tensors, metadata=metadata)
    # ... and packed FP4 through its raw API (two E2M1 codes per byte; shape counts elements).
    fp4 = rng.integers(0, 256, (2, 4), dtype=np.uint8)
    specs = {}
    for name, view in deserialize(blob):
        arr = np.frombuffer(view["data"], dtype=np.uint8).copy()
        tensors_bytes[name] = arr
        specs[name] = TensorSpec(dtype=torch_name(view["dtype"]), shape=view["shape"], data_ptr=arr.ctypes.data,
                                 data_len=arr.nbytes)
    specs["model.f4"] = TensorSpec(dtype="float4_e2m1fn_x2", shape=[2, 4], data_ptr=fp4.ctypes.data, data_len=fp4.nbytes)
    blob = serialize(specs, metadata=metadata)

    os.makedirs(os.path.join(OUT, "expected"), exist_ok=True)
    with open(os.path.join(OUT, "golden.safetensors"), "wb") as f:
        f.write(blob)
    manifest = {"peer": f"safetensors {safetensors.__version__}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}",
                "metadata": metadata, "tensors": {}}
    header_len = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + header_len])
    for name, view in deserialize(blob):
        raw = tensors[name].tobytes() if name in tensors else fp4.tobytes()
        assert view["data"] == raw, name
        manifest["tensors"][name] = {"dtype": view["dtype"], "shape": view["shape"],
                                     "data_offsets": header[name]["data_offsets"], "hex": raw.hex()}
        if view["dtype"] in FLOAT_DTYPES:
            np.save(os.path.join(OUT, "expected", name + ".npy"), tensors[name].astype(np.float32))
    with open(os.path.join(OUT, "golden_manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(blob)} bytes, {len(manifest['tensors'])} tensors to {os.path.normpath(OUT)}")


TORCH_NAMES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "I32": "int32",
               "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
               "F32": "float32", "F64": "float64", "C64": "complex64", "F8_E4M3": "float8_e4m3fn",
               "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu"}
FLOAT_DTYPES = {"F16", "BF16", "F32", "F64", "F8_E4M3", "F8_E5M2", "F8_E8M0"}
tensors_bytes = {}  # keeps the buffers behind the TensorSpecs alive


def torch_name(dtype):
    return TORCH_NAMES[dtype]


if __name__ == "__main__":
    sys.exit(main())
