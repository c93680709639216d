// SPDX-License-Identifier: GPL-3.0-or-later
// Where the engine computes: the CPU or one CUDA GPU, as `--device cpu|cuda|cuda:N` (docs/CLI.md)
// and the requests' `device` fields name it. Plain C++ so the facade, the CLI and the GUI can hold
// and parse it; engine/models/model_device.h turns it into a LibTorch device after checking that
// this build and machine have that GPU.
#pragma once

#include <string>

namespace ql {

struct ComputeDevice {
    enum class Kind { Cpu, Cuda };
    Kind kind = Kind::Cpu;
    int index = 0;  // the GPU's ordinal for Cuda ("cuda" = "cuda:0"); 0 for Cpu

    bool is_cuda() const { return kind == Kind::Cuda; }
    // "cpu" or "cuda:N": what reports and run configs record.
    std::string text() const;
};

// "cpu", "cuda", "cuda:N" (N a decimal ordinal); "" = "cpu" (the requests' default). Anything
// else is a UserError ("--device: expected cpu, cuda or cuda:N, got 'x'").
ComputeDevice parse_compute_device(const std::string& text);

// What this build and machine offer, for check_compute_device.
struct CudaAvailability {
    bool torch_has_cuda = false;     // the LibTorch linked in has its CUDA backend
    bool quantlab_has_cuda = false;  // QuantLab's CUDA kernels are built in (-DQUANTLAB_CUDA)
    int gpus = 0;                    // CUDA GPUs visible to this process
};

// UserError when `device` cannot be used here: "this LibTorch was built without CUDA", "this
// QuantLab was built without its CUDA kernels", "no CUDA GPU is visible", "cuda:3 but only 1
// GPU". The CPU is always usable.
void check_compute_device(const ComputeDevice& device, const CudaAvailability& available);

}  // namespace ql
