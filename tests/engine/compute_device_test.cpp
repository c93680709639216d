// SPDX-License-Identifier: GPL-3.0-or-later
// --device: parsing, and every reason a device is refused, as users read them.
#include <gtest/gtest.h>

#include <torch/csrc/api/include/torch/cuda.h>

#include "engine/core/compute_device.h"
#include "engine/models/model_device.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

using test::user_error_text;

TEST(ComputeDevice, ParsesCpuCudaAndOrdinals) {
    EXPECT_FALSE(parse_compute_device("cpu").is_cuda());
    EXPECT_EQ(parse_compute_device("cpu").text(), "cpu");
    EXPECT_EQ(parse_compute_device("").text(), "cpu");  // a request's default
    const ComputeDevice cuda = parse_compute_device("cuda");
    EXPECT_TRUE(cuda.is_cuda());
    EXPECT_EQ(cuda.index, 0);
    EXPECT_EQ(cuda.text(), "cuda:0");
    EXPECT_EQ(parse_compute_device("cuda:0").text(), "cuda:0");
    EXPECT_EQ(parse_compute_device("cuda:7").index, 7);
    EXPECT_EQ(parse_compute_device("cuda:12").text(), "cuda:12");
}

TEST(ComputeDevice, RefusesAnythingElseNamingIt) {
    for (const std::string bad : {"gpu", "CUDA", "cpu:0", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cuda:00000", " cuda", "mps"})
        EXPECT_EQ(user_error_text([&] { parse_compute_device(bad); }),
                  "--device: expected cpu, cuda or cuda:N, got '" + bad + "'");
}

TEST(ComputeDevice, CpuIsAlwaysAvailable) {
    EXPECT_EQ(user_error_text([] { check_compute_device(parse_compute_device("cpu"), CudaAvailability{}); }), "no error");
    EXPECT_TRUE(torch_device("cpu").is_cpu());
    EXPECT_TRUE(torch_device("").is_cpu());
}

TEST(ComputeDevice, SaysWhyACudaDeviceIsUnavailable) {
    const ComputeDevice cuda3 = parse_compute_device("cuda:3");
    auto text = [&](const ComputeDevice& d, CudaAvailability a) { return user_error_text([&] { check_compute_device(d, a); }); };
    EXPECT_EQ(text(cuda3, {false, true, 0}), "--device: cuda:3 needs CUDA, but this LibTorch was built without CUDA (use --device cpu)");
    EXPECT_EQ(text(cuda3, {true, false, 4}),
              "--device: cuda:3 needs CUDA, but this QuantLab was built without its CUDA kernels (configure with -DQUANTLAB_CUDA=ON)");
    EXPECT_EQ(text(cuda3, {true, true, 0}),
              "--device: cuda:3 needs CUDA, but no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and the driver)");
    EXPECT_EQ(text(cuda3, {true, true, 1}), "--device: cuda:3 but only 1 GPU is visible (cuda:0)");
    EXPECT_EQ(text(cuda3, {true, true, 2}), "--device: cuda:3 but only 2 GPUs are visible (cuda:0 to cuda:1)");
    EXPECT_EQ(text(cuda3, {true, true, 4}), "no error");
    EXPECT_EQ(text(parse_compute_device("cuda"), {true, true, 1}), "no error");
}

// This build and machine: torch_device refuses CUDA exactly when, and as, its facts say.
TEST(ComputeDevice, TorchDeviceAgreesWithTheChecksOnThisBuild) {
    const CudaAvailability here = cuda_availability();
    const std::string expected = user_error_text([&] { check_compute_device(parse_compute_device("cuda"), here); });
    EXPECT_EQ(user_error_text([] { torch_device("cuda"); }), expected);
    if (!here.torch_has_cuda) {
        EXPECT_EQ(here.gpus, 0);
    }
}

TEST(ComputeDeviceGpu, TorchDeviceGivesTheGpusAndRefusesOneMore) {
    const CudaAvailability here = cuda_availability();
    if (!torch::cuda::is_available() || !here.torch_has_cuda || !here.quantlab_has_cuda || here.gpus == 0)
        GTEST_SKIP() << "no CUDA GPU usable by this build";
    EXPECT_EQ(here.gpus, static_cast<int>(torch::cuda::device_count()));
    const at::Device d = torch_device("cuda");
    EXPECT_TRUE(d.is_cuda());
    EXPECT_EQ(d.index(), 0);
    EXPECT_EQ(user_error_text([&] { torch_device("cuda:" + std::to_string(here.gpus)); }),
              "--device: cuda:" + std::to_string(here.gpus) + " but only " + std::to_string(here.gpus) +
                  (here.gpus == 1 ? " GPU is visible (cuda:0)" : " GPUs are visible (cuda:0 to cuda:" + std::to_string(here.gpus - 1) + ")"));
}

}  // namespace
}  // namespace ql
