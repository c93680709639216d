// SPDX-License-Identifier: GPL-3.0-or-later
// NVFP4 hf-modelopt export throughput on a Llama-3.2-1B-SHAPED stack (hidden 2048, MLP 8192,
// 32 heads / 8 KV heads, head_dim 64), measured on 2 of its 16 transformer blocks (121.6 M
// quantized weights; the full 1B model in float32 plus its export does not fit the 2-core
// reference machine comfortably). Vocabulary 2048 so the embedding and lm_head do not dominate.
// Both in the same run, bytes processed = the export's bytes on disk:
//   ExportFwriteBaseline   fwrite() of that many bytes from one buffer into a new file, fflush,
//                          fsync (what writing the export's bytes costs at the least)
//   ExportHfModeloptNvfp4  export_hf_modelopt of the weight-only NVFP4 model (W4A16_NVFP4):
//                          encode + pack + verify every layer, validate, write, fsync, rename
// The export's cost per 1B-model = (16 / 2) x the stack's time plus embedding/lm_head.
// scripts/bench-report prints the ratio.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/engine_runtime.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/models/model_config.h"
#include "engine/quant/recipe.h"

namespace {

namespace fs = std::filesystem;

class ExportFixture {
public:
    ExportFixture() {
        ql::initialise_engine_runtime();
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/quantlab-export-bench-XXXXXX";
        if (!::mkdtemp(pattern.data())) std::abort();
        dir_ = pattern;
        fs::create_directories(dir_ + "/src");
        std::ofstream(dir_ + "/src/config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 2, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 2048, "max_position_embeddings": 2048,
            "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu"})";
        model_ = ql::create_model(ql::read_hf_config(dir_ + "/src/config.json"), 0);
        q_ = std::make_unique<ql::QuantizedModel>(*model_, ql::parse_recipe(R"({"quant_cfg": [
            {"quantizer_name": "*weight_quantizer", "cfg": {"format": "nvfp4"}},
            {"quantizer_name": "*lm_head*", "enable": false}]})", "bench"));
        q_->set_enabled(true);
        ql::NullJobSink sink;
        ql::CancellationToken cancel;
        bytes_ = ql::export_hf_modelopt(*q_, dir_ + "/src", dir_ + "/out", true, sink, cancel).bytes;
    }
    ~ExportFixture() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    const std::string& dir() const { return dir_; }
    int64_t bytes() const { return bytes_; }
    ql::QuantizedModel& quantized() { return *q_; }

private:
    std::string dir_;
    std::unique_ptr<ql::Model> model_;
    std::unique_ptr<ql::QuantizedModel> q_;
    int64_t bytes_ = 0;
};

ExportFixture& fixture() {
    static ExportFixture f;
    return f;
}

void ExportFwriteBaseline(benchmark::State& state) {
    ExportFixture& f = fixture();
    std::vector<char> buf(static_cast<size_t>(f.bytes()), 1);
    const std::string path = f.dir() + "/fwrite.bin";
    for (auto _ : state) {
        FILE* out = std::fopen(path.c_str(), "wb");
        std::fwrite(buf.data(), 1, buf.size(), out);
        std::fflush(out);
        ::fsync(fileno(out));
        std::fclose(out);
    }
    state.SetBytesProcessed(state.iterations() * f.bytes());
}
BENCHMARK(ExportFwriteBaseline)->Unit(benchmark::kMillisecond)->UseRealTime();

void ExportHfModeloptNvfp4(benchmark::State& state) {
    ExportFixture& f = fixture();
    ql::NullJobSink sink;
    ql::CancellationToken cancel;
    for (auto _ : state) ql::export_hf_modelopt(f.quantized(), f.dir() + "/src", f.dir() + "/out", true, sink, cancel);
    state.SetBytesProcessed(state.iterations() * f.bytes());
}
BENCHMARK(ExportHfModeloptNvfp4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
