#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Peer check of the Export Doctor's config-schema verdicts (run by
tests/engine/doctor_schema_peer_test.cpp with the peers venv's python): compressed-tensors' own
QuantizationConfig.model_validate on each config.json given, as transformers' and vLLM's loaders
validate it. Prints one line per file, "PATH accepted" or "PATH refused: <first error line>";
exit 0 when every file was checked (whatever the verdicts), 1 when the peer cannot run."""
import json
import sys

import compressed_tensors
from compressed_tensors.quantization import QuantizationConfig


def main():
    print(f"compressed-tensors {compressed_tensors.__version__}")
    for path in sys.argv[1:]:
        with open(path) as f:
            qc = json.load(f)["quantization_config"]
        try:
            QuantizationConfig.model_validate(qc)
            print(f"{path} accepted")
        except Exception as e:  # pydantic's ValidationError
            print(f"{path} refused: " + " | ".join(str(e).splitlines()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
