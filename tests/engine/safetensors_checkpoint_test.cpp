// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;

struct TensorSet {
    std::vector<std::vector<uint8_t>> data;
    std::vector<SafetensorsWriteEntry> entries;
    void add(const std::string& name, size_t floats) {
        data.emplace_back(floats * 4);
        for (size_t i = 0; i < data.back().size(); ++i) data.back()[i] = static_cast<uint8_t>(i + entries.size());
        entries.push_back({name, SafetensorsDtype::F32, {static_cast<int64_t>(floats)}, data.back().data(), data.back().size()});
    }
};

// Sizes in bytes: 400, 400, 1200 (over the 1000 limit: a shard of its own), 400, 400, 0.
TensorSet six_tensors() {
    TensorSet m;
    m.add("embed", 100);
    m.add("l0.w", 100);
    m.add("big", 300);
    m.add("l1.w", 100);
    m.add("l2.w", 100);
    m.add("empty", 0);
    return m;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(SafetensorsCheckpoint, ShardsLikeHuggingFaceAndReadsBack) {
    const std::string dir = test::temp_dir("checkpoint") + "/out";  // created by the writer
    TensorSet m = six_tensors();
    const auto written = write_safetensors_checkpoint(dir, m.entries, 1000, {{"format", "pt"}});
    // huggingface_hub order: "big" (over the limit) is appended as a shard of its own while
    // [embed, l0.w] is still open; l1.w would tip that one over, so it closes: [big],
    // [embed, l0.w], [l1.w, l2.w, empty].
    ASSERT_EQ(written.size(), 4u);
    EXPECT_EQ(written[0], dir + "/model-00001-of-00003.safetensors");
    EXPECT_EQ(written[3], dir + "/model.safetensors.index.json");
    std::ifstream in(written[3]);
    const auto index = nlohmann::json::parse(in);
    EXPECT_EQ(index["metadata"]["total_size"], 2800);
    EXPECT_EQ(index["weight_map"]["big"], "model-00001-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["embed"], "model-00002-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["l0.w"], "model-00002-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["l1.w"], "model-00003-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["empty"], "model-00003-of-00003.safetensors");

    for (const std::string& path : {dir, dir + "/model.safetensors.index.json"}) {
        const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(path);
        EXPECT_TRUE(c.sharded());
        EXPECT_EQ(c.files().size(), 3u);
        EXPECT_EQ(c.total_size(), 2800u);
        EXPECT_EQ(c.names(), (std::vector<std::string>{"big", "embed", "l0.w", "empty", "l1.w", "l2.w"}));
        for (size_t i = 0; i < m.entries.size(); ++i) {
            const TensorBytes b = c.bytes(m.entries[i].name);
            ASSERT_EQ(b.size, m.data[i].size());
            if (b.size) EXPECT_EQ(std::memcmp(b.data, m.data[i].data(), b.size), 0);
            EXPECT_EQ(c.file_of(m.entries[i].name).metadata().at("format"), "pt");
        }
        EXPECT_THROW(c.info("nope"), UserError);
    }
}

TEST(SafetensorsCheckpoint, OneShardIsASingleFileAndStaleFilesAreRemoved) {
    const std::string dir = test::temp_dir("checkpoint");
    TensorSet m = six_tensors();
    write_safetensors_checkpoint(dir, m.entries, 1000);
    ASSERT_TRUE(fs::exists(dir + "/model-00003-of-00003.safetensors"));
    write_text(dir + "/notes.txt", "kept");
    write_text(dir + "/model-extra.safetensors", "kept: not a name we write");
    const auto written = write_safetensors_checkpoint(dir, m.entries, 1'000'000);
    EXPECT_EQ(written, (std::vector<std::string>{dir + "/model.safetensors"}));
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(dir + "/model-00001-of-00003.safetensors"));
    EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
    EXPECT_TRUE(fs::exists(dir + "/model-extra.safetensors"));
    const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir);
    EXPECT_FALSE(c.sharded());
    EXPECT_EQ(c.path(), dir + "/model.safetensors");
    EXPECT_EQ(c.names().size(), 6u);
    EXPECT_FALSE(c.total_size());
    // And back to shards: the single file goes.
    write_safetensors_checkpoint(dir, m.entries, 1000);
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
    EXPECT_EQ(SafetensorsCheckpoint::open(dir).files().size(), 3u);
    EXPECT_EQ(SafetensorsCheckpoint::open(dir + "/model-00002-of-00003.safetensors").names(),
              (std::vector<std::string>{"embed", "l0.w"}));
}

TEST(SafetensorsCheckpoint, BadEntriesFailBeforeAnythingIsWritten) {
    const std::string dir = test::temp_dir("checkpoint");
    TensorSet m = six_tensors();
    m.entries.push_back(m.entries[0]);
    EXPECT_THROW(write_safetensors_checkpoint(dir, m.entries, 1000), UserError);
    EXPECT_TRUE(fs::is_empty(dir));
}

// An index that lies, and what the error must say.
struct BadIndex {
    std::string index;  // JSON text
    std::string expect;
};

TEST(SafetensorsCheckpoint, LyingIndexesGiveErrorsNamingTheIndexAndTensor) {
    const std::string dir = test::temp_dir("checkpoint");
    TensorSet m = six_tensors();
    write_safetensors_checkpoint(dir, m.entries, 1000);
    const std::string s1 = "model-00001-of-00003.safetensors", s2 = "model-00002-of-00003.safetensors",
                      s3 = "model-00003-of-00003.safetensors";
    auto map_with = [&](const std::string& extra_or_replacement) {
        return "{\"weight_map\":{" + extra_or_replacement + "}}";
    };
    const std::string good_rest = "\"embed\":\"" + s2 + "\",\"l0.w\":\"" + s2 + "\",\"l1.w\":\"" + s3 + "\",\"l2.w\":\"" + s3 +
                                  "\",\"empty\":\"" + s3 + "\"";
    // A copy of shard 1 beside it: "big" would then be in two shards.
    fs::copy_file(dir + "/" + s1, dir + "/copy.safetensors");
    const std::vector<BadIndex> cases = {
        {"not json", "not valid JSON"},
        {"[]", "not a JSON object"},
        {"{\"metadata\":{}}", "\"weight_map\" (tensor name -> shard file) is missing"},
        {map_with("\"big\":1," + good_rest), "tensor \"big\": shard is not a string"},
        {map_with("\"big\":\"../" + s1 + "\"," + good_rest), "tensor \"big\": shard \"../model-00001-of-00003.safetensors\" is not a relative path"},
        {map_with("\"big\":\"/etc/passwd\"," + good_rest), "is not a relative path inside the index's folder"},
        {map_with("\"big\":\"sub/../../x\"," + good_rest), "is not a relative path"},
        {map_with("\"big\":\"" + s2 + "\"," + good_rest), "tensor \"big\" is mapped to shard \"" + s2 + "\", which does not hold it"},
        {map_with("\"big\":\"" + s1 + "\",\"l0.w\":\"" + s2 + "\",\"l1.w\":\"" + s3 + "\",\"l2.w\":\"" + s3 + "\",\"empty\":\"" + s3 + "\""),
         "tensor \"embed\" of shard \"" + s2 + "\" is not in the weight_map"},
        {map_with("\"big\":\"" + s1 + "\",\"ghost\":\"" + s1 + "\"," + good_rest), "tensor \"ghost\" is mapped to shard"},
        {map_with("\"big\":\"" + s1 + "\",\"x\":\"copy.safetensors\"," + good_rest), "tensor \"big\" is in two shards"},
        {map_with("\"big\":\"" + s1 + "\",\"big\":\"" + s1 + "\"," + good_rest), "duplicate key \"big\""},
        {map_with("\"big\":\"missing.safetensors\"," + good_rest), "missing.safetensors: cannot open"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string path = dir + "/bad" + std::to_string(i) + ".json";
        write_text(path, cases[i].index);
        try {
            SafetensorsCheckpoint::open(path);
            ADD_FAILURE() << "case " << i << " was accepted";
        } catch (const UserError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(cases[i].expect), std::string::npos) << "case " << i << ": " << msg;
            if (cases[i].expect.find("cannot open") == std::string::npos)
                EXPECT_EQ(msg.rfind(path + ": not a valid safetensors index: ", 0), 0u) << "case " << i << ": " << msg;
        }
    }
    // A corrupt shard names the shard.
    write_text(dir + "/" + s3, "garbage!");
    try {
        SafetensorsCheckpoint::open(dir);
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find(dir + "/" + s3 + ": not a valid safetensors file"), std::string::npos) << e.what();
    }
    EXPECT_THROW(SafetensorsCheckpoint::open(test::temp_dir("checkpoint")), UserError);  // neither index nor model.safetensors
}

TEST(SafetensorsCheckpoint, SymlinkedShardsAreFollowed) {
    // The Hugging Face cache links snapshot files to ../../blobs/<hash>.
    const std::string root = test::temp_dir("checkpoint");
    const std::string blobs = root + "/blobs", snap = root + "/snapshots/abc";
    TensorSet m = six_tensors();
    write_safetensors_checkpoint(blobs, m.entries, 1000);
    fs::create_directories(snap);
    for (const auto& e : fs::directory_iterator(blobs))
        fs::create_symlink("../../blobs/" + e.path().filename().string(), snap + "/" + e.path().filename().string());
    EXPECT_EQ(SafetensorsCheckpoint::open(snap).names().size(), 6u);
}

}  // namespace
}  // namespace ql
