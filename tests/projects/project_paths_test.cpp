// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/project_paths.h"

#include <gtest/gtest.h>

#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;

TEST(ProjectPaths, InsideTheProjectFolderIsStoredRelative) {
    test::TempDir dir;
    fs::create_directories(dir / "proj/models");
    const StoredPath s = store_path(dir / "proj", dir / "proj/models/m.safetensors");
    EXPECT_TRUE(s.is_relative);
    EXPECT_EQ(s.text, "models/m.safetensors");
    EXPECT_EQ(resolve_path(dir / "moved", s), dir / "moved/models/m.safetensors");
}

TEST(ProjectPaths, OutsideTheProjectFolderStaysAbsolute) {
    test::TempDir dir;
    fs::create_directories(dir / "proj");
    const StoredPath s = store_path(dir / "proj", dir / "elsewhere/m.bin");
    EXPECT_FALSE(s.is_relative);
    EXPECT_EQ(fs::path(s.text), fs::weakly_canonical(dir / "elsewhere/m.bin"));
    EXPECT_EQ(resolve_path(dir / "moved", s), fs::path(s.text));
}

TEST(ProjectPaths, SiblingWithACommonPrefixIsNotInside) {
    test::TempDir dir;
    fs::create_directories(dir / "proj");
    fs::create_directories(dir / "proj2");
    EXPECT_FALSE(store_path(dir / "proj", dir / "proj2/m.bin").is_relative);
    EXPECT_FALSE(store_path(dir / "proj", dir / "proj/../m.bin").is_relative);
}

}  // namespace
}  // namespace ql::projects
