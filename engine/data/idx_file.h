// SPDX-License-Identifier: GPL-3.0-or-later
// IDX files, the format of the MNIST distribution (LeCun et al., "THE MNIST DATABASE"):
// two zero bytes, a type byte (0x08 = unsigned byte), the number of dimensions, one big-endian
// uint32 size per dimension, then the data in C order. We read unsigned-byte files only
// (images, labels) and check what the header claims against the file: the type, at least one
// dimension, sizes whose product does not overflow, and a file size equal to header + data
// exactly. Every error is a UserError naming the file. Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

struct IdxArray {
    std::vector<int64_t> dims;  // e.g. {60000, 28, 28} for images, {60000} for labels
    std::vector<uint8_t> data;  // product(dims) bytes, C order
};

IdxArray read_idx(const std::string& path);
IdxArray parse_idx(const std::string& bytes, const std::string& name);
// The file image of an array (used by tests and to write small generated data sets).
std::string serialize_idx(const IdxArray& array);
void write_idx(const std::string& path, const IdxArray& array);

// The labels file that belongs to an MNIST-style images file: "train-images-idx3-ubyte" ->
// "train-labels-idx1-ubyte", "t10k-images.idx3-ubyte" -> "t10k-labels.idx1-ubyte". Returns ""
// when the name does not follow the convention.
std::string idx_labels_path_for(const std::string& images_path);

// True when the first bytes look like an IDX file (two zero bytes, a known type, 1-8 dims).
bool looks_like_idx(const std::string& path);

}  // namespace ql
