// SPDX-License-Identifier: GPL-3.0-or-later
// Model sizes counted before allocation (engine/models/model_size.h): the count equals the built
// model's for every architecture, and a config.json asking for more than the machine holds is a
// user error naming the file, the key and the bytes, before any tensor exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/allocation_limit.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/models/model_config.h"
#include "engine/models/model_size.h"
#include "engine/train/demo_trainer.h"
#include "user_error_text.h"

namespace ql {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Sets QUANTLAB_MEMORY_LIMIT_BYTES for one scope.
class MemoryLimit {
public:
    explicit MemoryLimit(uint64_t bytes) { setenv("QUANTLAB_MEMORY_LIMIT_BYTES", std::to_string(bytes).c_str(), 1); }
    ~MemoryLimit() { unsetenv("QUANTLAB_MEMORY_LIMIT_BYTES"); }
};

std::string data(const std::string& rel) { return std::string(QUANTLAB_TEST_DATA_DIR) + "/" + rel; }

TEST(ModelSize, CountEqualsTheBuiltModelForEveryArchitecture) {
    std::vector<ModelConfig> configs = {demo_decoder_config(), demo_training_config().model, mlp_config(),
                                        mlp_config(20, 8, 0, 3), mlp_config(20, 8, 1, 3), cnn_config()};
    for (const char* m : {"llama", "llama3_gqa", "mistral_swa", "qwen2", "gpt2", "bert"})
        configs.push_back(read_hf_config(data("models/" + std::string(m) + "/config.json")));
    // Both ways of the head and the biases.
    ModelConfig tied = demo_decoder_config();
    tied.tie_embeddings = true;
    tied.attention_bias = tied.attention_out_bias = tied.mlp_bias = true;
    configs.push_back(tied);
    ModelConfig gpt2_untied = read_hf_config(data("models/gpt2/config.json"));
    gpt2_untied.tie_embeddings = !gpt2_untied.tie_embeddings;
    configs.push_back(gpt2_untied);
    for (const ModelConfig& c : configs) {
        const auto model = create_model_uninitialised(c);
        const auto count = model_parameter_count(c);
        ASSERT_TRUE(count.has_value()) << c.architecture;
        EXPECT_EQ(*count, static_cast<uint64_t>(model->parameter_count())) << c.architecture << " " << c.model_type;
    }
}

TEST(ModelSize, HugeHiddenSizeIsRefusedNamingFileKeyAndBytes) {
    json j = json::parse(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 1099511627776,
        "intermediate_size": 11008, "num_hidden_layers": 2, "num_attention_heads": 32})");
    const std::string error = test::user_error_text([&] { parse_hf_config(j.dump(), "big/config.json"); });
    EXPECT_EQ(error.rfind("big/config.json: key 'hidden_size' = 1099511627776: the model's ", 0), 0u) << error;
    // 32000 x 2^40 (embeddings) x 2 (untied head) + per layer 4 (2^40)^2 ... : beyond 64 bits.
    EXPECT_NE(error.find("would need more than 18446744073709551615 bytes"), std::string::npos) << error;
    EXPECT_NE(error.find("more than this machine's memory ("), std::string::npos) << error;
    EXPECT_NE(error.find("vocab_size 32000"), std::string::npos) << error;
}

TEST(ModelSize, TheByteCountIsExactAndTheLimitIsTheMachinesMemory) {
    // The demo model: 1,199,424 parameters (docs/DATA.md), 4,797,696 bytes as float32.
    const ModelConfig demo = demo_training_config().model;
    ASSERT_EQ(model_parameter_count(demo), 1199424u);
    {
        MemoryLimit limit(4797696);  // exactly enough
        EXPECT_NO_THROW(require_model_fits_memory(demo, "demo"));
    }
    MemoryLimit limit(4797695);
    const std::string error = test::user_error_text([&] { require_model_fits_memory(demo, "demo/config.json"); });
    // No size is unusual: the model is too large for this (pretended) machine, every size is named.
    EXPECT_EQ(error.rfind("demo/config.json: the model's sizes: the model's 1199424 parameters (vocab_size 48, ", 0), 0u)
        << error;
    EXPECT_NE(error.find("the model's 1199424 parameters"), std::string::npos) << error;
    EXPECT_NE(error.find("would need 4.8 MB (4797696 bytes), more than this machine's memory (4.8 MB (4797695 bytes))"),
              std::string::npos)
        << error;
    // create_model refuses it too, before allocating.
    EXPECT_NE(test::user_error_text([&] { create_model_uninitialised(demo); }).find("4797696 bytes"), std::string::npos);
}

TEST(ModelSize, TheUnusualSizeIsBlamedNotTheLargestNumber) {
    // 320 layers of a 7B-wide Llama: vocab_size 32000 is the largest number, the layers are the lie.
    json j = json::parse(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 3200, "num_attention_heads": 32})");
    const std::string error = test::user_error_text([&] { parse_hf_config(j.dump(), "l/config.json"); });
    EXPECT_EQ(error.rfind("l/config.json: key 'num_hidden_layers' = 3200: ", 0), 0u) << error;
}

TEST(ModelSize, GptTwoKeysAreNamedAsItsConfigNamesThem) {
    json j = json::parse(R"({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 1000000000,
        "n_head": 12, "n_positions": 1024})");
    const std::string error = test::user_error_text([&] { parse_hf_config(j.dump(), "g/config.json"); });
    EXPECT_EQ(error.rfind("g/config.json: key 'n_layer' = 1000000000: the model's 7087", 0), 0u) << error;
    EXPECT_NE(error.find(" TB ("), std::string::npos) << error;
}

TEST(ModelSize, ReadingAHugeConfigFromAFolderAllocatesNothing) {
    // Through the file reader, as `quantlab-cli inspect` reads it: the error, not bad_alloc.
    const fs::path dir = fs::temp_directory_path() / ("quantlab-huge-config-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"model_type": "bert", "vocab_size": 30522, "hidden_size": 384,
        "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
        "max_position_embeddings": 4398046511104})";
    const std::string error = test::user_error_text([&] { read_hf_config((dir / "config.json").string()); });
    EXPECT_EQ(error.rfind((dir / "config.json").string() + ": key 'max_position_embeddings' = 4398046511104", 0), 0u)
        << error;
    EXPECT_NE(error.find("bytes), more than this machine's memory"), std::string::npos) << error;
    fs::remove_all(dir);
}

TEST(AllocationLimit, CheckedArithmeticAndText) {
    EXPECT_EQ(checked_product({1u << 20, 1u << 20, 1u << 20}), uint64_t{1} << 60);
    EXPECT_FALSE(checked_product({uint64_t{1} << 40, uint64_t{1} << 40}).has_value());
    EXPECT_EQ(checked_product({uint64_t{1} << 40, uint64_t{1} << 40, 0}), 0u);
    EXPECT_FALSE(checked_sum(~uint64_t{0}, 1).has_value());
    EXPECT_EQ(bytes_text(999999), "999999 bytes");
    EXPECT_EQ(bytes_text(uint64_t{5} * 1000 * 1000 * 1000), "5.0 GB (5000000000 bytes)");
    EXPECT_GT(physical_memory_bytes(), uint64_t{1} << 28);  // any machine that builds QuantLab
}

}  // namespace
}  // namespace ql
