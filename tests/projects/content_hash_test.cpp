// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/content_hash.h"

#include <gtest/gtest.h>

#include "engine/core/errors.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

using test::TempDir;
using test::write_bytes;

TEST(ContentHash, MatchesTheFipsTestVectors) {
    // FIPS 180-2 appendix B.1 and the empty message.
    EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ContentHash, FileHashIsTheHashOfItsBytes) {
    TempDir dir;
    write_bytes(dir / "a.bin", "abc");
    const ContentHash h = hash_content(dir / "a.bin");
    EXPECT_EQ(h.sha256, sha256_hex("abc", 3));
    EXPECT_EQ(h.size_bytes, 3u);
}

TEST(ContentHash, FolderHashChangesWithAnyFileOrName) {
    TempDir dir;
    std::filesystem::create_directories(dir / "m/sub");
    write_bytes(dir / "m/config.json", "{}");
    write_bytes(dir / "m/sub/w.safetensors", "weights");
    const ContentHash first = hash_content(dir / "m");
    EXPECT_EQ(first.size_bytes, 9u);
    EXPECT_EQ(hash_content(dir / "m").sha256, first.sha256);  // deterministic

    write_bytes(dir / "m/sub/w.safetensors", "weightz");
    EXPECT_NE(hash_content(dir / "m").sha256, first.sha256);
    write_bytes(dir / "m/sub/w.safetensors", "weights");
    std::filesystem::rename(dir / "m/config.json", dir / "m/config2.json");
    EXPECT_NE(hash_content(dir / "m").sha256, first.sha256);
}

TEST(ContentHash, MissingPathIsAUserErrorNamingIt) {
    TempDir dir;
    try {
        hash_content(dir / "nope.bin");
        FAIL() << "expected a UserError";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("nope.bin"), std::string::npos);
    }
}

}  // namespace
}  // namespace ql::projects
