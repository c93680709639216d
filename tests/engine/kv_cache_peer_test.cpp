// SPDX-License-Identifier: GPL-3.0-or-later
// The KV-cache quantizer's FP8 and NVFP4 numerics checked by NVIDIA Model Optimizer itself
// (tests/peers/kv_cache_modelopt.py in the peers venv). A peer that cannot run fails the test.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/io/npy_file.h"
#include "engine/quant/kv_cache_quantizer.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/float_array.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

TEST(KvCachePeer, Fp8AndNvfp4MatchModelOptimizer) {
    const std::string python = test::peers_python();
    const std::string dir = test::temp_dir("kv-peer");
    AttentionSite site;
    site.name = "model.layers.0.self_attn";
    site.num_heads = 4;
    site.num_kv_heads = 2;
    site.head_dim = 64;
    at::manual_seed(7);
    // Keys with RoPE-like outlier dimensions: a few head_dim channels 20x larger.
    at::Tensor k = at::randn({2, 2, 33, 64});
    k.select(3, 5).mul_(20.0);
    k.select(3, 37).mul_(-12.0);
    const float amax = k.abs().max().item<float>() * 0.9f;  // a calibrated amax a little below this batch's max
    KvCacheQuantizer fp8(site, kv_cache_preset("fp8"), false), nvfp4(site, kv_cache_preset("nvfp4"), false);
    fp8.set_amax({amax}, {amax});
    nvfp4.set_amax({amax}, {amax});
    write_npy(dir + "/k.npy", test::float_array(k));
    write_npy(dir + "/fp8.npy", test::float_array(fp8.quantize_key(k)));
    write_npy(dir + "/nvfp4.npy", test::float_array(nvfp4.quantize_key(k)));
    {
        std::ofstream json(dir + "/case.json");
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(amax));
        json << "{\"amax\": " << buf << "}\n";
    }
    const test::PeerOutput peer = test::run_peer_script(python, "kv_cache_modelopt.py", "'" + dir + "'", dir);
    EXPECT_EQ(peer.status, 0) << peer.output;
    std::printf("%s", peer.output.c_str());
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ql
