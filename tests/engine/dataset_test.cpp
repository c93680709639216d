// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/errors.h"
#include "engine/data/dataset.h"
#include "engine/data/idx_file.h"
#include "engine/data/token_file.h"
#include "engine/io/npy_file.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

std::vector<int64_t> row(const at::Tensor& t, int64_t i) {
    const at::Tensor r = t[i].contiguous();
    return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

template <class F>
void expect_user_error(F&& f, const std::string& fragment) {
    try {
        f();
        ADD_FAILURE() << "no error; expected " << fragment;
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

DataContext token_model(int64_t vocab = 100, int64_t positions = 64) {
    DataContext c;
    c.vocab_size = vocab;
    c.max_positions = positions;
    c.model_name = "m";
    return c;
}

TEST(Dataset, SyntheticTargetsScoreOnlyTheAnswer) {
    const Dataset d = make_synthetic_dataset({SyntheticDomain::Add, SyntheticDomain::Mul}, DataSplit::Validation, 3, 4);
    ASSERT_EQ(d.inputs.sizes(), (at::IntArrayRef{4, 13}));
    EXPECT_TRUE(d.has_answers);
    EXPECT_EQ(d.domain_names, (std::vector<std::string>{"+", "*"}));
    EXPECT_EQ(row(d.domains.unsqueeze(0), 0), (std::vector<int64_t>{0, 1, 0, 1}));
    for (int64_t i = 0; i < 4; ++i) {
        const SyntheticExample e =
            generate_example(i % 2 ? SyntheticDomain::Mul : SyntheticDomain::Add, DataSplit::Validation, 3, i / 2);
        const std::vector<int64_t> in = row(d.inputs, i), tg = row(d.targets, i);
        for (int64_t p = 0; p < 13; ++p) {
            EXPECT_EQ(in[p], e.tokens[p]);
            EXPECT_EQ(tg[p], p >= 8 ? e.tokens[p + 1] : Dataset::kIgnoreIndex) << p;  // 4 digits + <eos>
        }
    }
}

TEST(Dataset, SyntheticStreamRangesAreConsecutive) {
    const auto domains = parse_synthetic_spec("synthetic:arith");
    const Dataset whole = make_synthetic_dataset(domains, DataSplit::Train, 9, 10);
    const Dataset tail = make_synthetic_dataset(domains, DataSplit::Train, 9, 4, 6);
    EXPECT_TRUE(at::equal(whole.inputs.slice(0, 6, 10), tail.inputs));
    EXPECT_TRUE(at::equal(whole.domains.slice(0, 6, 10), tail.domains));
}

TEST(Dataset, RepeatedDomainsWeightTheMixWithoutRepeatingProblems) {
    using D = SyntheticDomain;
    const Dataset d = make_synthetic_dataset({D::Add, D::Mul, D::Mul}, DataSplit::Train, 4, 9);
    EXPECT_EQ(d.domain_names, (std::vector<std::string>{"+", "*"}));
    EXPECT_EQ(row(d.domains.unsqueeze(0), 0), (std::vector<int64_t>{0, 1, 1, 0, 1, 1, 0, 1, 1}));
    // The multiplications are that domain's problems 0..5, in order.
    int64_t k = 0;
    for (int64_t i = 0; i < 9; ++i) {
        if (i % 3 == 0) continue;
        const SyntheticExample e = generate_example(D::Mul, DataSplit::Train, 4, k++);
        EXPECT_EQ(row(d.inputs, i), std::vector<int64_t>(e.tokens.begin(), e.tokens.end() - 1));
    }
}

TEST(Dataset, RandomTokensAreUniformDeterministicAndSplitBySeed) {
    const Dataset a = make_random_token_dataset(50, 16, DataSplit::Train, 1, 200);
    const Dataset b = make_random_token_dataset(50, 16, DataSplit::Train, 1, 200);
    const Dataset v = make_random_token_dataset(50, 16, DataSplit::Validation, 1, 200);
    EXPECT_TRUE(at::equal(a.inputs, b.inputs));
    EXPECT_FALSE(at::equal(a.inputs, v.inputs));
    EXPECT_EQ(a.inputs.sizes(), (at::IntArrayRef{200, 16}));
    EXPECT_TRUE(at::equal(a.inputs.slice(1, 1, 16), a.targets.slice(1, 0, 15)));
    EXPECT_GE(a.inputs.min().item<int64_t>(), 0);
    EXPECT_LT(a.inputs.max().item<int64_t>(), 50);
    const at::Tensor counts = at::bincount(a.inputs.flatten(), {}, 50);
    EXPECT_GT(counts.min().item<int64_t>(), 20);  // 64 expected per id
    EXPECT_FALSE(a.has_answers);
}

TEST(Dataset, WindowsPredictEveryTokenOnceAndSplitTheTail) {
    std::vector<int64_t> tokens(101);
    for (int64_t i = 0; i < 101; ++i) tokens[i] = i;
    const Dataset all = make_window_dataset(tokens, 10, DataSplit::All, "t");
    ASSERT_EQ(all.size(), 10);
    EXPECT_EQ(row(all.inputs, 3), (std::vector<int64_t>{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}));
    EXPECT_EQ(row(all.targets, 3), (std::vector<int64_t>{31, 32, 33, 34, 35, 36, 37, 38, 39, 40}));
    const Dataset train = make_window_dataset(tokens, 10, DataSplit::Train, "t");
    const Dataset val = make_window_dataset(tokens, 10, DataSplit::Validation, "t");
    EXPECT_EQ(train.size(), 9);
    EXPECT_EQ(val.size(), 1);
    EXPECT_EQ(row(val.inputs, 0).front(), 90);
    expect_user_error([&] { make_window_dataset(std::vector<int64_t>(5, 1), 10, DataSplit::All, "short.txt"); },
                      "short.txt: 5 tokens are fewer than one window");
    expect_user_error([&] { make_window_dataset(std::vector<int64_t>(12, 1), 10, DataSplit::Validation, "one.txt"); },
                      "too few for a validation split");
}

// A seeded calibration subset of a file's rows: seed 0 keeps the first rows (as before); other
// seeds draw distinct rows of the whole set, in order, the same for the same seed, with every
// field taken from the same rows.
TEST(Dataset, DrawnRowsAreASeededSubsetInOrder) {
    std::vector<int64_t> tokens(1001);
    for (int64_t i = 0; i < 1001; ++i) tokens[i] = i;
    const Dataset all = make_window_dataset(tokens, 10, DataSplit::All, "t");  // 100 windows
    ASSERT_EQ(all.size(), 100);
    const auto first_tokens = [](const Dataset& d) {
        std::vector<int64_t> firsts;
        for (int64_t i = 0; i < d.size(); ++i) {
            firsts.push_back(d.inputs[i][0].item<int64_t>());
            EXPECT_EQ(d.targets[i][0].item<int64_t>(), firsts.back() + 1);  // targets from the same window
        }
        return firsts;
    };
    EXPECT_EQ(first_tokens(draw_rows(all, 3, 0)), (std::vector<int64_t>{0, 10, 20}));
    EXPECT_EQ(draw_rows(all, 0, 5).size(), 100);
    EXPECT_EQ(draw_rows(all, 500, 5).size(), 100);
    const std::vector<int64_t> a = first_tokens(draw_rows(all, 20, 1));
    const std::vector<int64_t> again = first_tokens(draw_rows(all, 20, 1));
    const std::vector<int64_t> b = first_tokens(draw_rows(all, 20, 2));
    ASSERT_EQ(a.size(), 20u);
    EXPECT_EQ(a, again);
    EXPECT_NE(a, b);
    EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
    EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 20u);
    // Drawn from the whole set, not from its head: 20 of 100 rows all below 40 has probability ~1e-9.
    EXPECT_GE(a.back(), 400);
    // Over 2000 seeds every row is drawn about equally often: 400 times expected (20 %), standard
    // deviation 18; the bounds are 4.5 of them (the seeds are fixed: the test is deterministic).
    std::vector<int> drawn(100, 0);
    for (uint64_t seed = 1; seed <= 2000; ++seed)
        for (int64_t first : first_tokens(draw_rows(all, 20, seed))) ++drawn[first / 10];
    for (int i = 0; i < 100; ++i) {
        EXPECT_GT(drawn[i], 320) << "row " << i;
        EXPECT_LT(drawn[i], 480) << "row " << i;
    }
}

TEST(Dataset, TokenFilesNpyAndNanoGptBin) {
    const std::string dir = test::temp_dir("data");
    // .npy uint16 stream, int32 2-D sequences, and a raw uint16 .bin as nanoGPT writes it.
    NdArray stream = NdArray::zeros(DType::UInt16, {33});
    for (int i = 0; i < 33; ++i) stream.as<uint16_t>()[i] = static_cast<uint16_t>(i * 3);
    write_npy(dir + "/stream.npy", stream);
    NdArray rows = NdArray::zeros(DType::Int32, {4, 9});
    for (int i = 0; i < 36; ++i) rows.as<int32_t>()[i] = i;
    write_npy(dir + "/rows.npy", rows);
    std::string bin;
    for (int i = 0; i < 33; ++i) {
        bin += static_cast<char>((i * 3) & 0xFF);
        bin += static_cast<char>(0);
    }
    write_bytes(dir + "/train.bin", bin);

    DataOptions o;
    o.sequence_length = 8;
    const Dataset s = load_dataset(dir + "/stream.npy", o, token_model());
    EXPECT_EQ(s.size(), 4);
    EXPECT_EQ(row(s.targets, 1).back(), 48);
    const Dataset b = load_dataset(dir + "/train.bin", o, token_model());
    EXPECT_TRUE(at::equal(s.inputs, b.inputs));
    const Dataset r = load_dataset(dir + "/rows.npy", DataOptions{}, token_model());
    ASSERT_EQ(r.inputs.sizes(), (at::IntArrayRef{4, 8}));
    EXPECT_EQ(row(r.targets, 2).front(), 19);

    o.token_dtype = "uint32";  // 66 bytes are not whole uint32 ids
    expect_user_error([&] { load_dataset(dir + "/train.bin", o, token_model()); }, "not a whole number of uint32");
    expect_user_error([&] { load_dataset(dir + "/stream.npy", DataOptions{}, token_model(90)); },
                      "token 30 is 90, outside the model's vocabulary [0, 90)");
    EXPECT_EQ(read_token_file(dir + "/train.bin", 0, "").tokens.size(), 33u);
    NdArray floats = NdArray::zeros(DType::Float32, {4});
    write_npy(dir + "/f.npy", floats);
    expect_user_error([&] { read_token_file(dir + "/f.npy", 10, ""); }, "must be int32, int64, uint16 or uint32");
}

TEST(Dataset, TextFilesAndFoldersThroughTheModelsEncoder) {
    const std::string dir = test::temp_dir("data");
    std::filesystem::create_directories(dir + "/corpus/sub");
    write_bytes(dir + "/corpus/b.txt", "bbbb");
    write_bytes(dir + "/corpus/a.txt", "aaaa");
    write_bytes(dir + "/corpus/sub/c.txt", "cccc");
    write_bytes(dir + "/corpus/ignored.md", "zzzz");
    DataContext c = token_model(300);
    c.encode_text = [](const std::string& text, const std::string&) {
        return std::vector<int64_t>(text.begin(), text.end());
    };
    c.eos_id = 0;
    DataOptions o;
    o.sequence_length = 5;
    const Dataset d = load_dataset(dir + "/corpus", o, c);
    // a a a a <eos> b b b b <eos> c c c c <eos>: sorted by path, 15 tokens, 2 windows of 6.
    ASSERT_EQ(d.size(), 2);
    EXPECT_EQ(row(d.inputs, 0), (std::vector<int64_t>{'a', 'a', 'a', 'a', 0}));
    EXPECT_EQ(row(d.inputs, 1), (std::vector<int64_t>{'b', 'b', 'b', 'b', 0}));
    EXPECT_EQ(row(d.targets, 1).back(), 'c');

    // A line range of a text file is one document of those lines (a part of a corpus).
    write_bytes(dir + "/lines.txt", "first\n\nthird\nfourth\n");
    o.sequence_length = 3;
    const Dataset part = load_dataset(dir + "/lines.txt#lines=2-4", o, c);
    // "\nthird\nfourth" <eos>: 14 tokens, 4 windows of 4.
    ASSERT_EQ(part.size(), 4);
    EXPECT_EQ(row(part.inputs, 0), (std::vector<int64_t>{'\n', 't', 'h'}));
    EXPECT_EQ(row(part.targets, 3), (std::vector<int64_t>{'r', 't', 'h'}));
    EXPECT_EQ(load_dataset(dir + "/lines.txt#lines=1-1", o, c).size(), 1);  // "first" <eos>
    expect_user_error([&] { load_dataset(dir + "/lines.txt#lines=2-5", o, c); },
                      "data '" + dir + "/lines.txt#lines=2-5': line 5 is past the end of " + dir + "/lines.txt (4 lines)");
    expect_user_error([&] { load_dataset(dir + "/lines.txt#lines=3-2", o, c); }, "1 <= A <= B");
    o.sequence_length = 5;

    c.encode_text = nullptr;
    expect_user_error([&] { load_dataset(dir + "/corpus/a.txt", o, c); }, "has no tokenizer");
    expect_user_error([&] { load_dataset(dir + "/lines.txt#lines=1-2", o, c); }, "has none");
    std::filesystem::create_directories(dir + "/empty");
    c.encode_text = [](const std::string&, const std::string&) { return std::vector<int64_t>{1}; };
    expect_user_error([&] { load_dataset(dir + "/empty", o, c); }, "holds no .txt files");
}

TEST(Dataset, IdxImagesWithTheirLabels) {
    const std::string dir = test::temp_dir("data");
    IdxArray images, labels;
    images.dims = {10, 4, 4};
    for (int i = 0; i < 160; ++i) images.data.push_back(static_cast<uint8_t>(i % 256));
    labels.dims = {10};
    for (int i = 0; i < 10; ++i) labels.data.push_back(static_cast<uint8_t>(i % 3));
    write_idx(dir + "/train-images-idx3-ubyte", images);
    write_idx(dir + "/train-labels-idx1-ubyte", labels);
    DataContext image_model;
    const Dataset d = load_dataset(dir + "/train-images-idx3-ubyte", DataOptions{}, image_model);
    EXPECT_EQ(d.kind, Dataset::Kind::Images);
    ASSERT_EQ(d.inputs.sizes(), (at::IntArrayRef{10, 1, 4, 4}));
    EXPECT_FLOAT_EQ(d.inputs[0][0][0][1].item<float>(), 1.0f / 255.0f);
    EXPECT_EQ(d.targets[4].item<int64_t>(), 1);
    DataOptions val;
    val.split = DataSplit::Validation;
    EXPECT_EQ(load_dataset(dir + "/train-images-idx3-ubyte", val, image_model).size(), 1);

    labels.dims = {9};
    labels.data.pop_back();
    write_idx(dir + "/train-labels-idx1-ubyte", labels);
    expect_user_error([&] { load_dataset(dir + "/train-images-idx3-ubyte", DataOptions{}, image_model); },
                      "train-labels-idx1-ubyte: expected 10 labels");
    std::filesystem::rename(dir + "/train-images-idx3-ubyte", dir + "/digits.idx");
    expect_user_error([&] { load_dataset(dir + "/digits.idx", DataOptions{}, image_model); }, "no labels file");
    expect_user_error([&] { load_dataset(dir + "/digits.idx", DataOptions{}, token_model()); }, "need an image model");
}

TEST(Dataset, SpecErrorsNameTheSpec) {
    expect_user_error([] { load_dataset("/no/such/file.txt", DataOptions{}, token_model()); },
                      "data '/no/such/file.txt': no such file or folder");
    expect_user_error([] { load_dataset("synthetic:arith", DataOptions{}, token_model(40)); }, "only 40");
    expect_user_error([] { load_dataset("synthetic:arith", DataOptions{}, token_model(48, 8)); }, "needs 13 positions");
    DataOptions o;
    o.sequence_length = 100;
    expect_user_error([&] { load_dataset("synthetic:random-tokens", o, token_model()); }, "exceeds m's 64 positions");
    DataOptions defaults;
    const Dataset d = load_dataset("synthetic:arith:*", defaults, token_model(48, 32));
    EXPECT_EQ(d.size(), 1500);
    EXPECT_EQ(d.split, DataSplit::Validation);
    EXPECT_EQ(load_dataset("synthetic:random-tokens", defaults, token_model(48, 32)).inputs.size(1), 32);
}

}  // namespace
}  // namespace ql

namespace ql {
namespace {

std::vector<int64_t> row_of(const at::Tensor& t, int64_t r) {
    const at::Tensor row = t.select(0, r).contiguous();
    return {row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()};
}

TEST(TextWindows, FixedWindowsScoreAsTransformersPerplexityGuide) {
    std::vector<int64_t> tokens(23);
    for (int64_t i = 0; i < 23; ++i) tokens[static_cast<size_t>(i)] = 100 + i;
    const int64_t x = Dataset::kIgnoreIndex;
    TextWindows w;
    w.kind = TextWindows::Kind::Fixed;
    const Dataset d = make_text_windows(tokens, 8, w, DataContext{}, DataSplit::All, "t");
    ASSERT_EQ(d.size(), 2);  // 23 tokens: two windows of 8 start at 0 and 8, the tail of 7 is dropped
    EXPECT_EQ(row_of(d.inputs, 1), (std::vector<int64_t>{108, 109, 110, 111, 112, 113, 114, 115}));
    EXPECT_EQ(row_of(d.targets, 1), (std::vector<int64_t>{109, 110, 111, 112, 113, 114, 115, x}));
    w.stride = 4;  // windows at 0, 4, 8, 12: later ones score the predictions of their last 4 tokens
    const Dataset s = make_text_windows(tokens, 8, w, DataContext{}, DataSplit::All, "t");
    ASSERT_EQ(s.size(), 4);
    EXPECT_EQ(row_of(s.targets, 0), (std::vector<int64_t>{101, 102, 103, 104, 105, 106, 107, x}));
    EXPECT_EQ(row_of(s.targets, 1), (std::vector<int64_t>{x, x, x, 108, 109, 110, 111, x}));
    // Every token from 101 to 115 is predicted exactly once.
    EXPECT_EQ(s.targets.ne(x).sum().item<int64_t>(), 7 + 3 * 4);
}

TEST(TextWindows, LlamaChunksScoreTheSecondHalfAfterBos) {
    std::vector<int64_t> tokens(20);
    for (int64_t i = 0; i < 20; ++i) tokens[static_cast<size_t>(i)] = 100 + i;
    const int64_t x = Dataset::kIgnoreIndex;
    TextWindows w;
    w.kind = TextWindows::Kind::Llama;
    DataContext c;
    c.bos_id = 1;
    c.add_bos = true;
    const Dataset d = make_text_windows(tokens, 8, w, c, DataSplit::All, "t");
    ASSERT_EQ(d.size(), 2);
    EXPECT_EQ(row_of(d.inputs, 1), (std::vector<int64_t>{1, 109, 110, 111, 112, 113, 114, 115}));
    // first = 8 / 2: positions 4..6 predict tokens 5..7 of the chunk (8 - 1 - 4 = 3 predictions).
    EXPECT_EQ(row_of(d.targets, 1), (std::vector<int64_t>{x, x, x, x, 113, 114, 115, x}));
    c.add_bos = false;
    EXPECT_EQ(row_of(make_text_windows(tokens, 8, w, c, DataSplit::All, "t").inputs, 0)[0], 100);
    EXPECT_EQ(parse_text_windows("hf"), TextWindows::Kind::Fixed);
    EXPECT_THROW(parse_text_windows("sliding"), UserError);
    EXPECT_THROW(make_text_windows(std::vector<int64_t>(5, 1), 8, w, c, DataSplit::All, "t"), UserError);
}

}  // namespace
}  // namespace ql
