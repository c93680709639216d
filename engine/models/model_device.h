// SPDX-License-Identifier: GPL-3.0-or-later
// Putting a model on the device the user chose (--device, engine/core/compute_device.h). A model
// computes where its parameters are: the models build every other tensor (positions, masks, RoPE
// tables) on their inputs' device, and the quantizers on their weights' device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "engine/core/compute_device.h"

namespace ql {

class Model;
struct Dataset;

// What this build and process offer: the LibTorch CUDA backend, QuantLab's CUDA kernels, the
// number of visible GPUs.
CudaAvailability cuda_availability();

// The LibTorch device for `device`, after check_compute_device against cuda_availability()
// (UserError with the reason when this build or machine lacks it).
at::Device torch_device(const ComputeDevice& device);
// The same from the text of a --device option or a request's `device` field ("" = cpu).
at::Device torch_device(const std::string& device_text);

// Where the model's parameters are (the CPU for a model without parameters).
at::Device model_device(const Model& model);

// Moves every parameter to `device` in place (Tensor::set_data, as torch.nn.Module.to does): the
// tensors keep their identity, so tied weights (lm_head and the embedding are one tensor) stay
// one tensor and whatever holds a parameter (layers, quantizer hooks, optimizer state built
// afterwards) sees it on the new device. A no-op for parameters already there. Values are copied
// exactly (float32 in, float32 out). Call it outside inference mode, before training starts.
void move_model(Model& model, at::Device device);

// `t` on the model's device (a no-op, no copy, when it is there already).
at::Tensor on_model_device(const Model& model, const at::Tensor& t);
// A batch's tensors (inputs, targets, domains, attention mask) on the model's device.
Dataset batch_on_model_device(const Model& model, const Dataset& batch);

}  // namespace ql
