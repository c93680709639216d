// SPDX-License-Identifier: GPL-3.0-or-later
// Integer groups that do not tile the row (SmolLM2's 576 inputs in groups of 128: four groups and
// one of 64) checked by NVIDIA Model Optimizer, which pads the last group with zeros
// (tests/peers/int_short_group_modelopt.py in the peers venv). A peer that cannot run fails.
#include <gtest/gtest.h>

#include <ATen/ATen.h>


#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/npy_file.h"
#include "tests/engine/float_array.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

TEST(IntShortGroupPeer, LastGroupOf64IsModelOptimizersZeroPaddedGroup) {
    const std::string python = test::peers_python();
    const std::string dir = test::temp_dir("short-group-peer");
    at::manual_seed(11);
    at::Tensor w = at::randn({8, 576}) * 0.02;
    w.select(1, 570).mul_(40.0);             // an outlier column inside the short group
    w.select(0, 3).narrow(0, 10, 1).fill_(0.9);
    w.select(0, 5).narrow(0, 512, 64).zero_();  // a short group of zeros: scale 0
    w.select(0, 6).narrow(0, 512, 64).abs_();   // and one of positive values only
    write_npy(dir + "/w.npy", test::float_array(w));
    for (const char* format : {"int4", "int8"}) {
        QuantOptions o;
        o.format = format;
        o.granularity = "group";
        o.group_size = 128;
        const QuantSpec spec = resolve_spec(o, {8, 576});
        const at::Tensor y = fake_quantize(w, spec);
        const EncodedTensor e = encode_buffer(w.data_ptr<float>(), {8, 576}, spec);
        ASSERT_EQ(e.scales.shape, (std::vector<int64_t>{8, 5})) << format;  // ceil(576 / 128) scales per row
        // The short group on its own gives the same values: nothing of the first groups leaks in.
        const at::Tensor tail = w.narrow(1, 512, 64).contiguous();
        QuantOptions per_row = o;
        per_row.group_size = 64;
        EXPECT_TRUE(at::equal(y.narrow(1, 512, 64), fake_quantize(tail, resolve_spec(per_row, {8, 64})))) << format;
        write_npy(dir + "/" + format + ".npy", test::float_array(y));
        write_npy(dir + "/" + format + "_scales.npy", e.scales);
    }
    test::expect_peer_passes(python, "int_short_group_modelopt.py", "'" + dir + "'", dir);
}

}  // namespace
}  // namespace ql
