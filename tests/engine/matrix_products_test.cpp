// SPDX-License-Identifier: GPL-3.0-or-later
// The models' matrix products (engine/models/matrix_products.h) against LibTorch's own: a linear
// layer's x · wᵀ + b as at::linear (values and gradients), attention's per-head products as
// transformers' repeat_kv and matmul. With Debian's LibTorch they run on oneDNN, whose
// sums run in another order: equal to a relative 1e-5.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/version.h>

#include "engine/models/matrix_products.h"

namespace ql {
namespace {

at::Tensor random_fp32(at::IntArrayRef shape, int64_t seed) {
    at::manual_seed(seed);
    return at::randn(shape, at::kFloat);
}

void expect_near_tensors(const at::Tensor& got, const at::Tensor& want) {
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), want.scalar_type());
    const double scale = want.numel() ? want.abs().max().item<double>() : 0.0;
    const double diff = want.numel() ? (got - want).abs().max().item<double>() : 0.0;
    EXPECT_LE(diff, 1e-5 * (1.0 + scale)) << "largest |difference| " << diff << " on values up to " << scale;
}

TEST(MatrixProducts, RunOnOneDnnWithDebiansLibTorch) {
    // scripts/setup-deps installs libdnnl-dev; PyPI's LibTorch (2.x) keeps its own BLAS.
    EXPECT_EQ(matrix_products_on_onednn(), TORCH_VERSION_MAJOR == 1);
}

TEST(MatrixProducts, ALinearLayersProductEqualsAtLinearForEveryShapeItTakes) {
    const at::Tensor w = random_fp32({11, 7}, 1), b = random_fp32({11}, 2);
    const at::Tensor x3 = random_fp32({2, 5, 7}, 3);
    expect_near_tensors(linear_product(x3, w, b), at::linear(x3, w, b));
    expect_near_tensors(linear_product(x3, w, at::Tensor()), at::linear(x3, w));
    const at::Tensor x1 = random_fp32({7}, 4);  // one vector
    expect_near_tensors(linear_product(x1, w, b), at::linear(x1, w, b));
    const at::Tensor strided = random_fp32({7, 6}, 5).t();  // [6, 7], columns in memory
    ASSERT_FALSE(strided.is_contiguous());
    expect_near_tensors(linear_product(strided, w, b), at::linear(strided, w, b));
    const at::Tensor w_view = random_fp32({7, 11}, 6).t();  // a transposed weight view
    expect_near_tensors(linear_product(x3, w_view, b), at::linear(x3, w_view, b));
    // Empty batches and empty sums: [0, 7] -> [0, 11]; a zero-width input gives the bias alone.
    expect_near_tensors(linear_product(random_fp32({0, 7}, 7), w, b), at::linear(random_fp32({0, 7}, 7), w, b));
    const at::Tensor none = at::zeros({3, 0}), w0 = at::zeros({4, 0}), b4 = random_fp32({4}, 8);
    expect_near_tensors(linear_product(none, w0, b4), b4.expand({3, 4}));
    // A large product, the size of SmolLM2's MLP on a 64-token window.
    const at::Tensor xl = random_fp32({64, 576}, 9), wl = random_fp32({1536, 576}, 10);
    expect_near_tensors(linear_product(xl, wl, at::Tensor()), at::linear(xl, wl));
}

TEST(MatrixProducts, OtherDtypesAndWrongShapesGoToAtLinear) {
    const at::Tensor w = random_fp32({5, 4}, 11);
    const at::Tensor xd = random_fp32({3, 4}, 12).to(at::kDouble);
    const at::Tensor yd = linear_product(xd, w.to(at::kDouble), at::Tensor());
    EXPECT_EQ(yd.scalar_type(), at::kDouble);
    expect_near_tensors(yd, at::linear(xd, w.to(at::kDouble)));
    // A shape mismatch is LibTorch's error, not a read past the buffers.
    EXPECT_THROW(linear_product(random_fp32({3, 6}, 13), w, at::Tensor()), c10::Error);
}

TEST(MatrixProducts, GradientsFlowThroughTheLinearProductAsThroughAtLinear) {
    const at::Tensor w0 = random_fp32({6, 5}, 14), x0 = random_fp32({4, 5}, 15), b0 = random_fp32({6}, 16);
    at::Tensor w = w0.clone().requires_grad_(true), x = x0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
    linear_product(x, w, b).pow(2).sum().backward();
    at::Tensor wr = w0.clone().requires_grad_(true), xr = x0.clone().requires_grad_(true), br = b0.clone().requires_grad_(true);
    at::linear(xr, wr, br).pow(2).sum().backward();
    expect_near_tensors(w.grad(), wr.grad());
    expect_near_tensors(x.grad(), xr.grad());
    expect_near_tensors(b.grad(), br.grad());

    // No bias, a [2, 3, 5] input, and a frozen weight (LoRA's base): the input's gradient alone.
    const at::Tensor x3 = random_fp32({2, 3, 5}, 23);
    at::Tensor xa = x3.clone().requires_grad_(true), xb = x3.clone().requires_grad_(true);
    const at::Tensor y = linear_product(xa, w0, at::Tensor());
    EXPECT_TRUE(y.requires_grad());
    (y * y.detach()).sum().backward();
    (at::linear(xb, w0) * at::linear(xb, w0).detach()).sum().backward();
    expect_near_tensors(xa.grad(), xb.grad());
    // The weight's gradient alone (the input a constant), summed over a batch of 64 rows.
    const at::Tensor x64 = random_fp32({64, 5}, 24);
    at::Tensor wa = w0.clone().requires_grad_(true), wb = w0.clone().requires_grad_(true);
    linear_product(x64, wa, at::Tensor()).sum().backward();
    at::linear(x64, wb).sum().backward();
    expect_near_tensors(wa.grad(), wb.grad());
    EXPECT_GT(wa.grad().abs().sum().item<double>(), 0.0);
}

TEST(MatrixProducts, HeadProductsEqualRepeatKvAndMatmulWithSharedKeyHeads) {
    // q [B=2, H=6, T=5, D=8] as split_heads makes it (a transposed view), keys and values of
    // 3 heads each shared by 2 query heads (grouped-query attention).
    const at::Tensor q = random_fp32({2, 5, 6, 8}, 17).transpose(1, 2);
    const at::Tensor k = random_fp32({2, 3, 7, 8}, 18), v = random_fp32({2, 7, 3, 8}, 19).transpose(1, 2);
    const double scale = 0.125;
    const at::Tensor scores = head_product(q, k, /*m_transposed=*/true, scale);
    const at::Tensor keys = k.repeat_interleave(2, 1), values = v.repeat_interleave(2, 1);
    expect_near_tensors(scores, at::matmul(q, keys.transpose(-1, -2)) * scale);
    const at::Tensor probs = at::softmax(scores, -1);
    expect_near_tensors(head_product(probs, v, /*m_transposed=*/false, 1.0), at::matmul(probs, values));
    // One head per key head, one query row (a decode step).
    const at::Tensor q1 = random_fp32({1, 3, 1, 8}, 20);
    expect_near_tensors(head_product(q1, k.narrow(0, 0, 1), true, 1.0), at::matmul(q1, k.narrow(0, 0, 1).transpose(-1, -2)));
}

TEST(MatrixProducts, GradientsFlowThroughHeadProducts) {
    const at::Tensor q0 = random_fp32({1, 4, 3, 5}, 21), k0 = random_fp32({1, 2, 6, 5}, 22);
    at::Tensor q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true);
    head_product(q, k, true, 0.5).pow(2).sum().backward();
    at::Tensor qr = q0.clone().requires_grad_(true), kr = k0.clone().requires_grad_(true);
    (at::matmul(qr, kr.repeat_interleave(2, 1).transpose(-1, -2)) * 0.5).pow(2).sum().backward();
    expect_near_tensors(q.grad(), qr.grad());
    expect_near_tensors(k.grad(), kr.grad());
}

}  // namespace
}  // namespace ql
