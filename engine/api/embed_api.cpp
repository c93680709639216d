// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/embed_api.h"

#include <ATen/Functions.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/nd_array.h"
#include "engine/data/sentence_data.h"
#include "engine/eval/sentence_embedder.h"
#include "engine/io/npy_file.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"

namespace ql {

EmbedSummary run_embed(const EmbedRequest& req, JobSink& sink, const CancellationToken& cancel) {
    if (req.data.empty()) throw UserError("embed: no data given (--data: a text file, one sentence per line)");
    if (req.out.empty()) throw UserError("embed: no output file given (--out emb.npy)");
    if (req.batch_size < 0 || req.sequence_length < 0) throw UserError("embed: the batch size and length must be positive");
    const at::Device device = torch_device(req.device);
    std::error_code ec;
    if (!std::filesystem::exists(req.data, ec)) throw UserError("data '" + req.data + "': no such file or folder");
    if (std::filesystem::exists(req.out, ec) && !req.force)
        throw UserError("embed: " + req.out + " already exists (pass --force to replace it)");
    sink.progress(0, 0, "load");
    OpenedModel opened = open_model(req.model);
    move_opened_model(opened, device);  // embed_sentences returns the embeddings on the host
    const ModelConfig& c = opened.model->config();
    if (!opened.model->is_encoder())
        throw UserError("embed: " + opened.path + " is a " + c.model_type +
                        " model; sentence embeddings need an encoder (a BERT-family model such as all-MiniLM-L6-v2)");
    if (!opened.data.encode_sentence)
        throw UserError("embed: " + opened.path + " has no tokenizer.json to turn sentences into tokens");
    const int64_t length = req.sequence_length > 0 ? req.sequence_length : opened.data.sentence_length;
    if (length < 2) throw UserError("embed: --seq-len must be at least 2 ([CLS] and [SEP])");
    if (length > c.max_positions)
        throw UserError("embed: --seq-len " + std::to_string(length) + " exceeds the model's " +
                        std::to_string(c.max_positions) + " positions");
    const std::vector<SentenceLine> lines = read_sentence_lines(req.data, /*keep_blank=*/true);
    if (lines.empty()) throw UserError(req.data + ": no lines to embed (the file is empty)");
    std::vector<std::string> sentences;
    sentences.reserve(lines.size());
    for (const SentenceLine& l : lines) sentences.push_back(l.text);
    const Dataset data = make_sentence_dataset(sentences, opened.data.encode_sentence, length, opened.data.pad_id, req.data);
    cancel.throw_if_cancelled();

    const auto start = std::chrono::steady_clock::now();
    const at::Tensor e = embed_sentences(*opened.model, data, req.batch_size, sink, cancel, "embed").contiguous();
    EmbedSummary s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.model_path = opened.path;
    s.data = req.data;
    s.out = req.out;
    s.sentences = e.size(0);
    s.dimension = e.size(1);
    s.max_tokens = length;
    s.longest_tokens = data.attention_mask.sum(1).max().item<int64_t>();
    s.pooling = c.sentence.pooling_name();
    s.normalize = c.sentence.normalize;
    s.config_source = c.sentence.source;
    if (!at::isfinite(e).all().item<bool>())
        throw UserError("embed: the model gives non-finite embeddings for " + req.data + " (no file written)");

    cancel.throw_if_cancelled();
    sink.progress(0, 1, "save");
    NdArray out = NdArray::zeros(DType::Float32, {s.sentences, s.dimension});
    std::memcpy(out.bytes.data(), e.data_ptr<float>(), out.bytes.size());
    write_npy(req.out, out);
    sink.progress(1, 1, "save");
    sink.artifact("embeddings", req.out);
    return s;
}

}  // namespace ql
