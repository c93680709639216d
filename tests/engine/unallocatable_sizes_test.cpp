// SPDX-License-Identifier: GPL-3.0-or-later
// Sizes that cannot be allocated are refused before anything is allocated, with a user error
// naming the file, the key and the bytes (engine/core/allocation_limit.h): one case per reader.
// Shapes here fit 64 bits (the overflow cases are in each reader's own tests) but ask for
// terabytes. config.json dimensions: model_size_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/allocation_limit.h"
#include "engine/data/dataset.h"
#include "engine/data/idx_file.h"
#include "engine/data/token_file.h"
#include "engine/io/gguf_file.h"
#include "engine/io/npy_file.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/whole_file.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;

class MemoryLimit {
public:
    explicit MemoryLimit(uint64_t bytes) { setenv("QUANTLAB_MEMORY_LIMIT_BYTES", std::to_string(bytes).c_str(), 1); }
    ~MemoryLimit() { unsetenv("QUANTLAB_MEMORY_LIMIT_BYTES"); }
};

std::string u64_le(uint64_t v) {
    std::string s(8, '\0');
    std::memcpy(s.data(), &v, 8);
    return s;
}
std::string u32_le(uint32_t v) {
    std::string s(4, '\0');
    std::memcpy(s.data(), &v, 4);
    return s;
}

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("quantlab-sizes-" + std::to_string(getpid()));
    fs::create_directories(dir);
    return dir / name;
}

void expect_names(const std::string& error, std::initializer_list<const char*> fragments) {
    for (const char* f : fragments) EXPECT_NE(error.find(f), std::string::npos) << "missing '" << f << "' in: " << error;
}

// 2^20 x 2^20 float32 = 4398046511104 bytes, in a file of 16.
TEST(UnallocatableSizes, SafetensorsHeaderShape) {
    const std::string header = R"({"w":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,16]}})";
    const std::string file = u64_le(header.size()) + header + std::string(16, '\0');
    const std::string error = test::user_error_text([&] { SafetensorsFile::parse(file, "big.safetensors"); });
    expect_names(error, {"big.safetensors", "tensor \"w\"", "shape [1048576, 1048576]", "needs 4398046511104 bytes"});
}

TEST(UnallocatableSizes, NpyHeaderShape) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }";
    while ((10 + dict.size() + 1) % 64) dict += ' ';
    dict += '\n';
    std::string file = std::string("\x93NUMPY\x01\x00", 8);
    file += static_cast<char>(dict.size() & 0xFF);
    file += static_cast<char>(dict.size() >> 8);
    file += dict + std::string(16, '\0');
    const std::string error = test::user_error_text([&] { parse_npy(file, "big.npy"); });
    expect_names(error, {"big.npy", "shape [1048576, 1048576]", "needs 4398046511104 data bytes", "the file has 16"});
}

TEST(UnallocatableSizes, GgufTensorInfoDimensions) {
    // GGUF v3: magic, version, 1 tensor, 0 metadata; tensor "w": 2 dims 2^20 x 2^20, F32, offset 0.
    std::string file = "GGUF" + u32_le(3) + u64_le(1) + u64_le(0);
    file += u64_le(1) + "w" + u32_le(2) + u64_le(1048576) + u64_le(1048576) + u32_le(0) + u64_le(0);
    while (file.size() % 32) file += '\0';
    file += std::string(16, '\0');
    const std::string error = test::user_error_text([&] { GgufFile::parse(file, "big.gguf"); });
    expect_names(error, {"big.gguf", "tensor 'w'", "4398046511104 bytes", "past the end of the data section"});
}

TEST(UnallocatableSizes, IdxDimensions) {
    std::string file("\0\0\x08\x03", 4);
    for (uint32_t d : {65536u, 65536u, 1024u}) file += std::string{static_cast<char>(d >> 24), static_cast<char>(d >> 16),
                                                                   static_cast<char>(d >> 8), static_cast<char>(d)};
    file += std::string(16, '\0');
    const std::string error = test::user_error_text([&] { parse_idx(file, "big-images-idx3-ubyte"); });
    expect_names(error, {"big-images-idx3-ubyte", "dimensions 65536x65536x1024", "need 4398046511104 data bytes"});
}

// Files are read whole only when they fit; token ids widened to int64 only when those fit.
TEST(UnallocatableSizes, WholeFilesAndTokenFilesAgainstTheMachinesMemory) {
    const fs::path bin = scratch("tokens.bin");
    std::ofstream(bin, std::ios::binary) << std::string(4096, '\x01');
    {
        MemoryLimit limit(4095);
        const std::string error = test::user_error_text([&] { read_whole_file(bin.string(), "token file"); });
        expect_names(error, {bin.string().c_str(), "reading the token file would need 4096 bytes", "(4095 bytes)"});
    }
    {
        // 2048 uint16 ids: the file fits, the int64 copy (16384 bytes) does not.
        MemoryLimit limit(8192);
        const std::string error = test::user_error_text([&] { read_token_file(bin.string(), 1000, "uint16"); });
        expect_names(error, {bin.string().c_str(), "2048 token ids", "widening them to int64 would need 16384 bytes"});
    }
    EXPECT_EQ(read_token_file(bin.string(), 1000, "uint16").tokens.size(), 2048u);
    fs::remove_all(bin.parent_path());
}

// Data sizes asked for by options: a trillion synthetic problems are refused before generating one.
TEST(UnallocatableSizes, SyntheticSamples) {
    DataContext context;
    context.vocab_size = 48;
    context.max_positions = 32;
    DataOptions options;
    options.samples = 1000000000000;
    std::string error = test::user_error_text([&] { load_dataset("synthetic:arith", options, context); });
    expect_names(error, {"data 'synthetic:arith': 1000000000000 samples of", "tokens: their inputs and targets (int64) would need",
                         "TB (", "more than this machine's memory"});
    options.samples = 2000000000;
    error = test::user_error_text([&] { load_dataset("synthetic:random-tokens", options, context); });
    // The demo's 32 positions: windows of 32 + 1 tokens, 2e9 x 33 x 4 x 8 bytes.
    expect_names(error, {"data 'synthetic:random-tokens': 2000000000 samples of 33 tokens", "would need 2.1 TB"});
}

}  // namespace
}  // namespace ql
