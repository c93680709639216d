// SPDX-License-Identifier: GPL-3.0-or-later
// Interop with the real peer: tests/data/safetensors/ was written by huggingface/safetensors
// 0.8.0 (scripts/golden/make_safetensors_golden.py), with expected float32 values from numpy /
// ml_dtypes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/io/npy_file.h"
#include "engine/io/safetensors_tensors.h"

namespace ql {
namespace {

const std::string kDir = std::string(QUANTLAB_TEST_DATA_DIR) + "/safetensors";

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

nlohmann::json manifest() { return nlohmann::json::parse(read_all(kDir + "/golden_manifest.json")); }

TEST(SafetensorsGolden, ReadsWhatThePeerWrote) {
    const SafetensorsFile f = SafetensorsFile::open(kDir + "/golden.safetensors");
    const auto m = manifest();
    EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
    ASSERT_EQ(f.tensors().size(), m["tensors"].size());
    for (const auto& [name, want] : m["tensors"].items()) {
        SCOPED_TRACE(name);
        const auto& info = f.info(name);
        EXPECT_STREQ(safetensors_dtype_name(info.dtype), want["dtype"].get<std::string>().c_str());
        EXPECT_EQ(info.shape, want["shape"].get<std::vector<int64_t>>());
        EXPECT_EQ(info.offset - f.data_offset(), want["data_offsets"][0].get<uint64_t>());
        const auto bytes = from_hex(want["hex"]);
        const TensorBytes b = f.bytes(name);
        ASSERT_EQ(b.size, bytes.size());
        if (b.size) EXPECT_EQ(std::memcmp(b.data, bytes.data(), b.size), 0);
    }
}

TEST(SafetensorsGolden, Float32ValuesMatchNumpyAndMlDtypes) {
    const SafetensorsFile f = SafetensorsFile::open(kDir + "/golden.safetensors");
    int checked = 0;
    for (const auto& t : f.tensors()) {
        const std::string npy = kDir + "/expected/" + t.name + ".npy";
        if (!std::ifstream(npy)) continue;
        SCOPED_TRACE(t.name);
        const NdArray want = read_npy(npy);
        const at::Tensor got = load_float32(f, t.name);
        EXPECT_EQ(got.sizes().vec(), want.shape);
        ASSERT_EQ(static_cast<size_t>(got.numel()) * 4, want.bytes.size());
        const float* g = got.data_ptr<float>();
        const float* w = want.as<float>();
        for (int64_t i = 0; i < got.numel(); ++i) {
            if (std::isnan(w[i])) {
                EXPECT_TRUE(std::isnan(g[i])) << i;
            } else {
                uint32_t gb, wb;  // bit-exact, -0 included
                std::memcpy(&gb, &g[i], 4);
                std::memcpy(&wb, &w[i], 4);
                EXPECT_EQ(gb, wb) << "element " << i << ": " << g[i] << " vs " << w[i];
            }
        }
        ++checked;
    }
    EXPECT_EQ(checked, 10);  // F32 x4 (incl. scalar and empty), F16, BF16, F64, F8 x3
}

TEST(SafetensorsGolden, OurWriterProducesThePeersBytes) {
    const std::string golden = read_all(kDir + "/golden.safetensors");
    const SafetensorsFile f = SafetensorsFile::parse(golden, "golden");
    std::vector<SafetensorsWriteEntry> entries;
    // Reverse file order: the writer's own sort must restore the peer's layout.
    for (auto it = f.tensors().rbegin(); it != f.tensors().rend(); ++it) {
        const TensorBytes b = f.bytes(*it);
        entries.push_back({it->name, it->dtype, it->shape, b.data, b.size});
    }
    EXPECT_TRUE(serialize_safetensors(entries, f.metadata()) == golden);
}

TEST(SafetensorsGolden, LibTorchViewsMatchTheManifest) {
    const SafetensorsFile f = SafetensorsFile::open(kDir + "/golden.safetensors");
    const at::Tensor i64 = safetensors_tensor(f, "model.i64");
    EXPECT_EQ(i64[0].item<int64_t>(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(i64[3].item<int64_t>(), std::numeric_limits<int64_t>::max());
    const at::Tensor b = safetensors_tensor(f, "model.bool");
    EXPECT_EQ(b.scalar_type(), at::kBool);
    EXPECT_EQ(b.sum().item<int64_t>(), 3);
    const at::Tensor c = safetensors_tensor(f, "model.c64");
    EXPECT_EQ(at::real(c)[0].item<float>(), 1.0f);
    EXPECT_EQ(at::imag(c)[1].item<float>(), -0.5f);
    EXPECT_EQ(safetensors_tensor(f, "model.scalar").item<float>(), 2.5f);
}

// The other direction: files for scripts/check-safetensors-interop, which loads them with the
// Python peer and compares against the same formulas. Runs only when that script asks.
TEST(SafetensorsInterop, WritesFilesForThePythonPeer) {
    const char* out = std::getenv("QUANTLAB_SAFETENSORS_INTEROP_DIR");
    if (!out || !*out) GTEST_SKIP() << "set by scripts/check-safetensors-interop";
    const std::string dir = out;
    auto iota = [](int64_t n, double scale, double shift) {
        return at::arange(n, at::kDouble).mul(scale).add(shift);
    };
    const at::Tensor codes = at::arange(256, at::kInt).to(at::kByte);
    const std::vector<uint64_t> u64 = {0, std::numeric_limits<uint64_t>::max()};
    const std::vector<uint16_t> u16 = {0, 1, 65535};
    const std::vector<uint32_t> u32 = {7, 4294967295u};
    const std::vector<uint8_t> f4 = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
    std::vector<at::Tensor> keep = {
        iota(12, 0.5, -3).to(at::kFloat).reshape({3, 4}),
        iota(10, 0.25, -1).to(at::kHalf).reshape({2, 5}),
        iota(16, 0.125, -1).to(at::kBFloat16).reshape({4, 4}),
        iota(3, 0.125, 0),
        iota(6, 20, -60).to(at::kChar),
        codes,
        at::tensor(std::vector<int16_t>{-32768, 0, 32767}),
        iota(4, 1000, -1500).to(at::kInt).reshape({2, 2}),
        at::tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()}),
        at::tensor(std::vector<uint8_t>{1, 0, 0, 1}).to(at::kBool),
        at::complex(at::tensor(std::vector<float>{1, -0.5f}), at::tensor(std::vector<float>{2, 0})),
        at::scalar_tensor(2.5, at::kFloat),
        at::zeros({0, 3}),
    };
    const char* names[] = {"f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "bool", "c64", "scalar", "empty"};
    std::vector<SafetensorsWriteEntry> entries;
    for (size_t i = 0; i < keep.size(); ++i) entries.push_back(safetensors_entry(names[i], keep[i]));
    entries.push_back(safetensors_entry("f8_e4m3", codes.reshape({16, 16}), SafetensorsDtype::F8_E4M3));
    entries.push_back(safetensors_entry("f8_e5m2", codes.reshape({16, 16}), SafetensorsDtype::F8_E5M2));
    entries.push_back(safetensors_entry("f8_e8m0", codes, SafetensorsDtype::F8_E8M0));
    entries.push_back({"u16", SafetensorsDtype::U16, {3}, u16.data(), 6});
    entries.push_back({"u32", SafetensorsDtype::U32, {2}, u32.data(), 8});
    entries.push_back({"u64", SafetensorsDtype::U64, {2}, u64.data(), 16});
    entries.push_back({"f4", SafetensorsDtype::F4, {2, 8}, f4.data(), 8});
    write_safetensors(dir + "/single.safetensors", entries, {{"format", "pt"}, {"producer", "quantlab"}});

    // 20 F32 [10] tensors, 40 bytes each, at most 300 bytes a shard: 3 shards.
    std::vector<at::Tensor> layers;
    std::vector<SafetensorsWriteEntry> sharded;
    for (int i = 0; i < 20; ++i) {
        layers.push_back(iota(10, 1, 10 * i).to(at::kFloat));
        sharded.push_back(safetensors_entry("layers." + std::to_string(i) + ".weight", layers.back()));
    }
    write_safetensors_checkpoint(dir + "/sharded", sharded, 300, {{"format", "pt"}});
}

}  // namespace
}  // namespace ql
