// SPDX-License-Identifier: GPL-3.0-or-later
// The composed-LibTorch-op versions that quantlab-bench uses as its baseline compute exactly what
// our kernels compute, so FakeQuant vs FakeQuantTorchOps compares the same math.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "bench/torch_ops_formats.h"
#include "engine/formats/tensor_quantize.h"

namespace ql {
namespace {

TEST(TorchOpsBaseline, EqualsTheFusedKernelsBitForBit) {
    at::manual_seed(7);
    const at::Tensor x = at::randn({64, 1024}) * at::exp(at::randn({64, 1}) * 3);
    for (const auto& f : bench::torch_ops_formats()) {
        QuantOptions o;
        o.format = f;
        if (f == "int4") {
            o.granularity = "group";
            o.group_size = 128;
        }
        const at::Tensor ours = fake_quantize(x, o);
        const at::Tensor composed = bench::torch_ops_fake_quant(x, f);
        EXPECT_TRUE(ours.equal(composed)) << f << ": max |diff| " << (ours - composed).abs().max().item<float>();
    }
}

}  // namespace
}  // namespace ql
