// SPDX-License-Identifier: GPL-3.0-or-later
// Importance matrices: collection as llama-imatrix does it (engine/calib/importance_collector.h),
// both llama.cpp file formats (engine/io/imatrix_file.h), merging and the statistics. gguf-py
// reading QuantLab's files and llama.cpp quantizing with them is scripts/check-gguf-mixes.
#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/calib/importance_collector.h"
#include "engine/core/errors.h"
#include "engine/core/importance_matrix.h"
#include "engine/io/gguf_file.h"
#include "engine/io/imatrix_file.h"
#include "engine/loading/model_source.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;

ImportanceMatrix small_matrix() {
    ImportanceMatrix m;
    m.datasets = {"calib.txt"};
    m.chunk_size = 16;
    m.chunk_count = 5;
    ImportanceEntry a;
    a.name = "blk.0.attn_q.weight";
    a.columns = 4;
    a.sum_sq = {1, 2, 3, 4};
    a.sum = {-1, 0.5, 2, 0};
    a.counts = {80};
    ImportanceEntry b;
    b.name = "blk.1.attn_q.weight";
    b.columns = 4;
    b.sum_sq = {2, 4, 6, 9};
    b.counts = {80};
    m.entries = {a, b};
    return m;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ImatrixFile, GgufRoundTripsWithLlamaCppsKeysAndTensorShapes) {
    const std::string dir = test::temp_dir("imatrix");
    const ImportanceMatrix m = small_matrix();
    write_imatrix(m, dir + "/i.gguf", ImatrixFormat::Gguf, false);
    const GgufFile f = GgufFile::open(dir + "/i.gguf");
    EXPECT_EQ(f.get("general.type").as_string("t"), "imatrix");
    EXPECT_EQ(f.get("imatrix.datasets").as_strings("d"), std::vector<std::string>{"calib.txt"});
    EXPECT_EQ(f.get("imatrix.chunk_count").type, GgufValueType::UINT32);
    EXPECT_EQ(f.get("imatrix.chunk_count").u, 5u);
    EXPECT_EQ(f.get("imatrix.chunk_size").u, 16u);
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight.in_sum2").ne, (std::vector<int64_t>{4, 1}));
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight.counts").ne, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight.in_sum").ne, (std::vector<int64_t>{4, 1}));
    EXPECT_FALSE(f.find_tensor("blk.1.attn_q.weight.in_sum"));  // no sums collected for it
    EXPECT_EQ(f.dequantize(f.tensor("blk.1.attn_q.weight.in_sum2")), (std::vector<float>{2, 4, 6, 9}));
    EXPECT_EQ(f.dequantize(f.tensor("blk.1.attn_q.weight.counts")), (std::vector<float>{80}));

    const ImportanceMatrix r = read_imatrix(dir + "/i.gguf");
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_EQ(r.chunk_count, 5);
    EXPECT_EQ(r.chunk_size, 16);
    EXPECT_EQ(r.datasets, m.datasets);
    EXPECT_EQ(r.entries[0].sum_sq, m.entries[0].sum_sq);
    EXPECT_EQ(r.entries[0].sum, m.entries[0].sum);
    EXPECT_EQ(r.entries[0].counts, m.entries[0].counts);
    // llama-quantize's importance: in_sum2 / count.
    EXPECT_EQ(r.find("blk.1.attn_q.weight")->mean_sq(), (std::vector<float>{2.f / 80, 4.f / 80, 6.f / 80, 9.f / 80}));
    EXPECT_NE(user_error_text([&] { write_imatrix(m, dir + "/i.gguf", ImatrixFormat::Gguf, false); }).find("already exists"),
              std::string::npos);
    fs::remove_all(dir);
}

TEST(ImatrixFile, LegacyDatIsLlamaCppsLayoutAndReadsBackToTheSameImportance) {
    ImportanceMatrix m = small_matrix();
    m.entries.resize(1);
    m.entries[0].counts = {40};  // ncall = ceil(40 / 16) = 3
    const std::string b = legacy_imatrix_bytes(m);
    std::string want;
    auto i32 = [&](int32_t v) { want.append(reinterpret_cast<const char*>(&v), 4); };
    auto f32 = [&](float v) { want.append(reinterpret_cast<const char*>(&v), 4); };
    i32(1);
    i32(19);
    want += "blk.0.attn_q.weight";
    i32(3);
    i32(4);
    for (float v : {1.f, 2.f, 3.f, 4.f}) f32((v / 40.f) * 3.f);
    i32(5);
    i32(9);
    want += "calib.txt";
    EXPECT_EQ(b, want);
    const ImportanceMatrix r = parse_imatrix(b, "i.dat");
    ASSERT_EQ(r.entries.size(), 1u);
    EXPECT_EQ(r.chunk_size, 0);  // legacy files do not say
    EXPECT_EQ(r.chunk_count, 5);
    EXPECT_EQ(r.datasets, std::vector<std::string>{"calib.txt"});
    EXPECT_EQ(r.entries[0].counts, std::vector<int64_t>{3});
    const std::vector<float> w = r.entries[0].mean_sq();
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(w[static_cast<size_t>(j)], static_cast<float>(j + 1) / 40.f) << j;
    // Written again, a legacy-read matrix gives the same bytes.
    EXPECT_EQ(legacy_imatrix_bytes(r), b);
    // The trailer is optional (older files).
    EXPECT_EQ(parse_imatrix(b.substr(0, b.size() - 4 - 4 - 9), "old.dat").chunk_count, 0);
}

TEST(ImatrixFile, LyingAndTruncatedFilesAreUserErrorsNamingTheField) {
    ImportanceMatrix m = small_matrix();
    const std::string good = legacy_imatrix_bytes(m);
    auto error = [](const std::string& bytes) { return user_error_text([&] { parse_imatrix(bytes, "x.dat"); }); };
    auto with_i32 = [&](size_t at, int32_t v) {
        std::string b = good;
        std::memcpy(&b[at], &v, 4);
        return b;
    };
    EXPECT_NE(error(with_i32(0, 0)).find("x.dat: entry count 0"), std::string::npos) << error(with_i32(0, 0));
    EXPECT_NE(error(with_i32(0, 1 << 30)).find("does not fit the file"), std::string::npos);
    EXPECT_NE(error(with_i32(4, -5)).find("entry 1: name length -5"), std::string::npos) << error(with_i32(4, -5));
    EXPECT_NE(error(with_i32(4 + 4 + 19 + 4, 1 << 28)).find("entry 1 ('blk.0.attn_q.weight') values"), std::string::npos)
        << error(with_i32(4 + 4 + 19 + 4, 1 << 28));
    EXPECT_NE(error(with_i32(4 + 4 + 19 + 4, 0)).find("value count 0"), std::string::npos);
    {
        std::string b = good;
        const float inf = INFINITY;
        std::memcpy(&b[4 + 4 + 19 + 8], &inf, 4);
        EXPECT_NE(error(b).find("non-finite value at 0"), std::string::npos) << error(b);
    }
    // Every truncation is refused or reads as a file without the optional trailer; none crashes.
    for (size_t n = 0; n < good.size(); ++n) {
        try {
            const ImportanceMatrix r = parse_imatrix(good.substr(0, n), "cut.dat");
            EXPECT_GE(n, good.size() - 17) << n;  // only the trailer may be missing
            EXPECT_EQ(r.entries.size(), 2u);
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find("cut.dat: "), std::string::npos) << e.what();
        }
    }
    // GGUF: the three keys llama-quantize requires, paired tensors, F32.
    const std::string dir = test::temp_dir("imatrix-bad");
    auto gguf_error = [&](const std::function<void(GgufWriter&)>& build) {
        {
            GgufWriter w(dir + "/b.gguf", true);
            build(w);
            w.commit();
        }
        return user_error_text([&] { read_imatrix(dir + "/b.gguf"); });
    };
    const float two[2] = {1, 2}, one[1] = {4};
    EXPECT_NE(gguf_error([&](GgufWriter& w) {
                  w.add_metadata("imatrix.chunk_count", GgufValue::u32(1));
                  w.add_metadata("imatrix.chunk_size", GgufValue::u32(8));
              }).find("b.gguf: metadata 'imatrix.datasets' is missing"),
              std::string::npos);
    auto keys = [](GgufWriter& w) {
        w.add_metadata("imatrix.datasets", GgufValue::string_array({"d"}));
        w.add_metadata("imatrix.chunk_count", GgufValue::u32(1));
        w.add_metadata("imatrix.chunk_size", GgufValue::u32(8));
    };
    EXPECT_NE(gguf_error([&](GgufWriter& w) {
                  keys(w);
                  w.add_tensor("a.weight.in_sum2", {2, 1}, GgmlType::F32);
                  w.write_tensor_data(two, 8);
              }).find("entry 'a.weight': '.counts' tensor is missing"),
              std::string::npos);
    EXPECT_NE(gguf_error([&](GgufWriter& w) {
                  keys(w);
                  w.add_tensor("a.weight.in_sum2", {2, 1}, GgmlType::F16);
                  w.add_tensor("a.weight.counts", {1, 1}, GgmlType::F32);
                  w.write_tensor_data(two, 4);
                  w.write_tensor_data(one, 4);
              }).find("tensor 'a.weight.in_sum2': type F16, expected F32"),
              std::string::npos);
    EXPECT_NE(gguf_error([&](GgufWriter& w) {
                  keys(w);
                  w.add_tensor("a.weight.in_sum2", {2, 1}, GgmlType::F32);
                  w.add_tensor("a.weight.counts", {1, 1}, GgmlType::F32);
                  const float neg[1] = {-3};
                  w.write_tensor_data(two, 8);
                  w.write_tensor_data(neg, 4);
              }).find("count -3.000000 is not a token count"),
              std::string::npos);
    // An empty sums tensor beside a count (found by scripts/fuzz-gguf): no entry of 0 columns.
    EXPECT_NE(gguf_error([&](GgufWriter& w) {
                  keys(w);
                  w.add_tensor("a.weight.in_sum2", {0, 1}, GgmlType::F32);
                  w.add_tensor("a.weight.counts", {1, 1}, GgmlType::F32);
                  w.write_tensor_data(one, 4);
              }).find("entry 'a.weight': 0 sums for 1 counts"),
              std::string::npos);
    fs::remove_all(dir);
}

TEST(ImatrixMerge, SumsAndCountsAddAsLlamaImatrixInFileDoes) {
    ImportanceMatrix a = small_matrix(), b = small_matrix();
    b.datasets = {"more.txt"};
    b.entries[1].name = "blk.2.attn_q.weight";
    merge_importance(a, b);
    ASSERT_EQ(a.entries.size(), 3u);
    EXPECT_EQ(a.find("blk.0.attn_q.weight")->sum_sq, (std::vector<double>{2, 4, 6, 8}));
    EXPECT_EQ(a.find("blk.0.attn_q.weight")->counts, std::vector<int64_t>{160});
    EXPECT_EQ(a.find("blk.1.attn_q.weight")->counts, std::vector<int64_t>{80});
    EXPECT_EQ(a.datasets, (std::vector<std::string>{"calib.txt", "more.txt"}));
    EXPECT_EQ(a.chunk_count, 160 / 16);
    // A legacy matrix joins in raw form (times the chunk size), as load_imatrix converts it.
    ImportanceMatrix legacy = parse_imatrix(legacy_imatrix_bytes(small_matrix()), "l.dat");
    ImportanceMatrix c = small_matrix();
    merge_importance(c, legacy);
    const std::vector<float> w = c.find("blk.0.attn_q.weight")->mean_sq();
    // (1 + (1/80*5)*16) / (80 + 5*16): both halves hold the mean 1/80.
    EXPECT_FLOAT_EQ(w[0], 1.f / 80.f);
    ImportanceMatrix bad = small_matrix();
    bad.entries[0].columns = 3;
    bad.entries[0].sum_sq = {1, 2, 3};
    ImportanceMatrix d = small_matrix();
    EXPECT_NE(user_error_text([&] { merge_importance(d, bad); }).find("entry 'blk.0.attn_q.weight' has 3 values"), std::string::npos);
}

TEST(ImatrixStatistics, AreLlamaImatrixsShowStatisticsPlusKurtosisAndTopColumns) {
    const std::vector<ImportanceStatistics> s = importance_statistics(small_matrix(), 2);
    ASSERT_EQ(s.size(), 2u);
    // a = {1, 2, 3, 4} / 80.
    const ImportanceStatistics& a = s[0];
    EXPECT_EQ(a.layer, 0);
    EXPECT_EQ(a.tensor, "attn_q");
    EXPECT_EQ(a.elements, 4);
    EXPECT_EQ(a.tokens, 80);
    EXPECT_FLOAT_EQ(a.total, 10.f / 80);
    EXPECT_FLOAT_EQ(a.mean, 2.5f / 80);
    EXPECT_FLOAT_EQ(a.min, 1.f / 80);
    EXPECT_FLOAT_EQ(a.max, 4.f / 80);
    EXPECT_NEAR(a.std, std::sqrt(1.25) / 80, 1e-6);
    EXPECT_NEAR(a.kurtosis, 2.5625 / (1.25 * 1.25), 1e-6);  // float32 sums of the column means
    EXPECT_NEAR(a.entropy, -(0.1 * std::log2(0.1) + 0.2 * std::log2(0.2) + 0.3 * std::log2(0.3) + 0.4 * std::log2(0.4)), 1e-5);
    EXPECT_NEAR(a.entropy_normalized, a.entropy / 2.0, 1e-6);
    EXPECT_FLOAT_EQ(a.zd, 0.25f);
    EXPECT_FLOAT_EQ(a.active, 1.f);
    ASSERT_EQ(a.top.size(), 2u);
    EXPECT_EQ(a.top[0].first, 3);
    EXPECT_EQ(a.top[1].first, 2);
    EXPECT_EQ(a.cossim, 0.f);  // no blk.-1
    // blk.1 against blk.0, over in_sum2: {2,4,6,9} . {1,2,3,4}.
    const double dot = 2 + 8 + 18 + 36, n1 = std::sqrt(4 + 16 + 36 + 81.0), n0 = std::sqrt(30.0);
    EXPECT_NEAR(s[1].cossim, dot / (n1 * n0), 1e-6);
}

TEST(ImatrixCollection, IsTheSumOfSquaredLayerInputsOverEveryTokenRow) {
    OpenedModel m = open_model(test::tiny_llama());
    const Dataset data = test::tokens_for(m, 4, 11, 16);
    NullJobSink sink;
    CancellationToken cancel;
    ImportanceCollection o;
    o.batch_size = 4;
    o.dataset_name = "random tokens";
    const ImportanceMatrix im = collect_importance(*m.model, data, o, sink, cancel);
    EXPECT_EQ(im.entries.size(), 14u);  // 7 matrices x 2 layers; output.weight only with process_output
    EXPECT_FALSE(im.find("output.weight"));
    EXPECT_EQ(im.chunk_size, 16);
    EXPECT_EQ(im.chunk_count, 4);
    EXPECT_EQ(im.datasets, std::vector<std::string>{"random tokens"});
    const ImportanceEntry* q = im.find("blk.0.attn_q.weight");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->columns, 64);
    EXPECT_EQ(q->counts, std::vector<int64_t>{64});
    EXPECT_EQ(q->sum_sq, im.find("blk.0.attn_v.weight")->sum_sq);  // q, k, v read the same input
    EXPECT_EQ(im.find("blk.1.ffn_down.weight")->columns, 96);
    // Independently: layer 0's attention input is RMSNorm(embedding) * input_layernorm.weight.
    std::map<std::string, at::Tensor> p;
    for (const auto& [n, t] : m.model->named_parameters()) p[n] = t;
    const at::Tensor x = at::embedding(p["model.embed_tokens.weight"], data.inputs).reshape({-1, 64}).to(at::kDouble);
    const at::Tensor h = x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * p["model.layers.0.input_layernorm.weight"].to(at::kDouble);
    const at::Tensor want = (h * h).sum(0);
    for (int64_t j = 0; j < 64; ++j)
        EXPECT_NEAR(q->sum_sq[static_cast<size_t>(j)], want[j].item<double>(), 1e-4 * want[j].item<double>()) << j;
    const at::Tensor want_sum = h.sum(0);
    for (int64_t j = 0; j < 64; ++j) EXPECT_NEAR(q->sum[static_cast<size_t>(j)], want_sum[j].item<double>(), 1e-3) << j;

    o.process_output = true;
    EXPECT_TRUE(collect_importance(*m.model, data, o, sink, cancel).find("output.weight"));
    // The hooks are gone afterwards: the model computes as before.
    EXPECT_FALSE(m.model->linear_layers()[0]->input_quantizer);
    // Batches of fewer than 16 rows are not collected, as in llama-imatrix.
    o.batch_size = 1;
    const Dataset short_rows = test::tokens_for(m, 2, 11, 8);
    EXPECT_NE(user_error_text([&] { collect_importance(*m.model, short_rows, o, sink, cancel); }).find("16 or more token rows"),
              std::string::npos);
}

}  // namespace
}  // namespace ql
