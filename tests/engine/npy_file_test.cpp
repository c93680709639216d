// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <unistd.h>

#include <fstream>

#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "tests/engine/user_error_text.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

std::string header_npy(const std::string& dict, size_t data_bytes) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(h.size() & 0xFF);
    out += static_cast<char>(h.size() >> 8);
    out += h;
    out.append(data_bytes, '\0');
    return out;
}

TEST(NpyFile, RoundTripsEveryDtypeAndShape) {
    const std::string dir = test::temp_dir("npy");
    for (DType d : {DType::Float32, DType::Float16, DType::UInt8, DType::Int8, DType::Int32, DType::Int64}) {
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, {0}, {5}, {2, 3}, {2, 1, 4}}) {
            NdArray a = NdArray::zeros(d, shape);
            for (size_t i = 0; i < a.bytes.size(); ++i) a.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
            write_npy(dir + "/a.npy", a);
            const NdArray b = read_npy(dir + "/a.npy");
            EXPECT_EQ(b.dtype, d);
            EXPECT_EQ(b.shape, shape);
            EXPECT_EQ(b.bytes, a.bytes);
        }
    }
}

TEST(NpyFile, HeaderIsWhatNumpyWrites) {
    const NdArray a = NdArray::from_floats({1, 2, 3}, {3});
    const std::string s = serialize_npy(a);
    EXPECT_EQ(s.size() % 64, 12u % 64);  // 64-aligned header + 12 data bytes
    EXPECT_NE(s.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
    const NdArray b = NdArray::from_floats({1, 2, 3, 4, 5, 6}, {2, 3});
    EXPECT_NE(serialize_npy(b).find("'shape': (2, 3), }"), std::string::npos);
}

TEST(NpyFile, LyingOrBrokenFilesGiveErrorsNamingTheFileAndField) {
    struct Bad {
        std::string bytes;
        std::string expect;  // part of the message
    };
    const std::string good = header_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    std::vector<Bad> cases = {
        {"", "magic"},
        {"NUMPY-not-really-a-file", "magic"},
        {good.substr(0, good.size() - 1), "needs 24 data bytes but the file has 23"},
        {good + "x", "needs 24 data bytes but the file has 25"},
        {header_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), "big-endian"},
        {header_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16), "not a supported dtype"},
        {header_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), "fortran_order"},
        {header_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8), "unknown key 'extra'"},
        {header_npy("{'descr': '<f4', 'shape': (2,), }", 8), "required"},
        {header_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8), "non-negative"},
        {header_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", 8), "overflows"},
        {header_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, }", 8), "shape"},
    };
    std::string long_header = good;
    long_header[8] = '\xff';
    long_header[9] = '\x7f';
    cases.push_back({long_header, "runs past the end"});
    std::string v9 = good;
    v9[6] = 9;
    cases.push_back({v9, "version 9"});
    const std::string dir = test::temp_dir("npy");
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string path = dir + "/bad" + std::to_string(i) + ".npy";
        std::ofstream(path, std::ios::binary) << cases[i].bytes;
        try {
            read_npy(path);
            ADD_FAILURE() << "case " << i << " was accepted";
        } catch (const UserError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(path), std::string::npos) << msg;
            EXPECT_NE(msg.find(cases[i].expect), std::string::npos) << "case " << i << ": " << msg;
        }
    }
    EXPECT_THROW(read_npy(dir + "/missing.npy"), UserError);
}

TEST(NpyFile, MutatedFilesNeverCrash) {
    // A small mutation corpus: every single-byte change and every truncation of a valid file
    // either parses to a consistent array or throws UserError.
    const NdArray a = NdArray::from_floats({1, 2, 3, 4, 5, 6}, {2, 3});
    const std::string s = serialize_npy(a);
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < s.size(); ++i)
        for (int v : {0, 0x20, 0x27, 0x28, 0x2c, 0x7f, 0xff}) {
            std::string m = s;
            m[i] = static_cast<char>(v);
            try {
                const NdArray b = parse_npy(m, "mutant");
                EXPECT_EQ(static_cast<int64_t>(b.bytes.size()), b.numel() * dtype_size(b.dtype));
                ++accepted;
            } catch (const UserError&) {
                ++rejected;
            }
        }
    for (size_t len = 0; len < s.size(); ++len) EXPECT_THROW(parse_npy(s.substr(0, len), "truncated"), UserError);
    EXPECT_GT(rejected, 0);
    EXPECT_GT(accepted, 0);  // padding spaces and data bytes may change freely
}

TEST(NpyFile, FailedWriteLeavesNoFileUnderTheFinalName) {
    if (geteuid() == 0) {
        // Root ignores directory permissions; use a path whose parent does not exist instead.
        EXPECT_THROW(write_npy("/nonexistent-dir/x.npy", NdArray::from_floats({1}, {1})), UserError);
        return;
    }
    const std::string dir = test::temp_dir("npy");
    chmod(dir.c_str(), 0500);
    EXPECT_THROW(write_npy(dir + "/x.npy", NdArray::from_floats({1}, {1})), UserError);
    EXPECT_NE(access((dir + "/x.npy").c_str(), F_OK), 0);
    chmod(dir.c_str(), 0700);
}

TEST(NpyFile, FullDiskErrorNamesThePathAndRemovesThePartialFile) {
    // A file-size limit makes write() fail with EFBIG, as a full disk fails with ENOSPC.
    const std::string dir = test::temp_dir("npy");
    const std::string msg = test::user_error_text_with_file_size_limit(
        4096, [&] { write_npy(dir + "/big.npy", NdArray::zeros(DType::Float32, {100000})); });
    EXPECT_NE(msg.find(dir + "/big.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("write failed"), std::string::npos) << msg;
    EXPECT_NE(access((dir + "/big.npy").c_str(), F_OK), 0);
    EXPECT_NE(access((dir + "/big.npy.partial").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace ql
