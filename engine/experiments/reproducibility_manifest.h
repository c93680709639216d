// SPDX-License-Identifier: GPL-3.0-or-later
// What a result depends on besides its inputs (docs/EXPERIMENTS.md "Reproducibility"): the
// QuantLab version and commit, LibTorch, the BLAS, the device and threads, the machine; recorded
// with every experiment invocation and every run of it, next to the seeds and the hashes of
// model, data and recipe. Plain C++ header.
#pragma once

#include <string>

namespace ql::experiments {

// A JSON object: quantlab_version, commit (git HEAD when the build was configured, "+dirty"
// when the tree had changes; "unknown" outside git), libtorch, blas, reference_blas, device
// ("cpu", the CUDA kernels noted), threads, host, os, cpu.
std::string environment_manifest_json();

// SHA-256 of a data file, or "" for built-in data (synthetic:..., generated from the seed).
std::string data_sha256(const std::string& data_spec);

}  // namespace ql::experiments
