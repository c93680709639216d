// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>

#include "engine/core/errors.h"
#include "engine/data/idx_file.h"

namespace ql {
namespace {

std::string bytes(std::initializer_list<int> v) {
    std::string s;
    for (int b : v) s += static_cast<char>(b);
    return s;
}

void expect_error(const std::string& image, const std::string& fragment) {
    try {
        parse_idx(image, "images.idx");
        ADD_FAILURE() << "accepted; expected " << fragment;
    } catch (const UserError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("images.idx"), std::string::npos) << m;
        EXPECT_NE(m.find(fragment), std::string::npos) << m;
    }
}

TEST(IdxFile, ReadsImagesAndLabels) {
    // 2 images of 2x3, as MNIST stores them: magic 0x00000803, big-endian sizes, bytes.
    const std::string images = bytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255});
    const IdxArray a = parse_idx(images, "x");
    EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 2, 3}));
    ASSERT_EQ(a.data.size(), 12u);
    EXPECT_EQ(a.data.front(), 1);
    EXPECT_EQ(a.data.back(), 255);
    const IdxArray labels = parse_idx(bytes({0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9}), "y");
    EXPECT_EQ(labels.dims, (std::vector<int64_t>{3}));
    EXPECT_EQ(labels.data, (std::vector<uint8_t>{7, 0, 9}));
}

TEST(IdxFile, BigEndianSizesAbove255) {
    IdxArray a;
    a.dims = {1, 300};
    a.data.assign(300, 4);
    const std::string s = serialize_idx(a);
    EXPECT_EQ(s.substr(0, 12), bytes({0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 1, 44}));
    EXPECT_EQ(parse_idx(s, "x").dims, a.dims);
}

TEST(IdxFile, RoundTripsThroughAFile) {
    char tmpl[] = "/tmp/quantlab-idx-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    IdxArray a;
    a.dims = {3, 4, 4};
    for (int i = 0; i < 48; ++i) a.data.push_back(static_cast<uint8_t>(i * 5));
    write_idx(dir + "/train-images-idx3-ubyte", a);
    const IdxArray b = read_idx(dir + "/train-images-idx3-ubyte");
    EXPECT_EQ(b.dims, a.dims);
    EXPECT_EQ(b.data, a.data);
    EXPECT_TRUE(looks_like_idx(dir + "/train-images-idx3-ubyte"));
}

TEST(IdxFile, RejectsLyingAndUnsupportedFiles) {
    expect_error("", "4-byte magic");
    expect_error(bytes({0, 0, 8}), "4-byte magic");
    expect_error(bytes({1, 0, 8, 1, 0, 0, 0, 0}), "two zero bytes");
    expect_error(bytes({0, 0, 7, 1, 0, 0, 0, 0}), "unknown element type 0x07");
    expect_error(bytes({0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0}), "float32 is not supported");
    expect_error(bytes({0, 0, 8, 0}), "number of dimensions is 0");
    expect_error(bytes({0, 0, 8, 3, 0, 0, 0, 2}), "declares 3 dimensions");
    // Claims 2x2x3 = 12 bytes, holds 11 / 13.
    expect_error(bytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
                 "need 12 data bytes but the file has 11");
    expect_error(bytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}),
                 "need 12 data bytes but the file has 13");
    // Sizes whose product overflows 64 bits must not wrap around to the file size.
    expect_error(bytes({0, 0, 8, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}), "need more than 0 data bytes");
    expect_error(bytes({0, 0, 8, 2, 0, 0, 255, 255, 0, 0, 255, 255}), "need 4294836225 data bytes but the file has 0");
    expect_error(bytes({0x1F, 0x8B, 8, 0}), "gzip");
}

TEST(IdxFile, FindsTheLabelsFileByMnistNames) {
    EXPECT_EQ(idx_labels_path_for("/d/train-images-idx3-ubyte"), "/d/train-labels-idx1-ubyte");
    EXPECT_EQ(idx_labels_path_for("t10k-images.idx3-ubyte"), "t10k-labels.idx1-ubyte");
    EXPECT_EQ(idx_labels_path_for("/images/digits.idx"), "");
}

TEST(IdxFile, UnreadableFileNamesThePath) {
    try {
        read_idx("/nonexistent/train-images-idx3-ubyte");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/train-images-idx3-ubyte"), std::string::npos);
    }
}

}  // namespace
}  // namespace ql
