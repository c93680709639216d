// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence embeddings of a whole sentence data set (sentence_data.h) through an encoder, batch
// by batch: what `quantlab-cli embed`, encoder evaluation, sensitivity and QAD's held-out checks
// compute. Like sentence-transformers' encode(), batches hold sentences of similar length (sorted
// by length, longest first), so little padding is computed; the rows come back in data order.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "engine/data/dataset.h"
#include "engine/jobs/job.h"
#include "engine/models/model.h"

namespace ql {

// Sentences per batch when the caller gives 0 (sentence-transformers' encode default).
constexpr int64_t kDefaultSentenceBatch = 32;

// data: padded sentences (attention_mask defined). -> float32 [N, D] (D = pooling modes x
// hidden size), row i for data row i. Runs without autograd history; reports progress(done
// sentences, N, phase) and checks `cancel` before every batch. UserError for a model that is not
// an encoder or data that are not sentences.
at::Tensor embed_sentences(Model& model, const Dataset& data, int64_t batch_size, JobSink& sink,
                           const CancellationToken& cancel, const std::string& phase = "embed");

// Cosine similarity of matching rows of a, b [N, D] -> double [N], computed in double; the
// product of the norms is clamped at 1e-8, so a zero row gives 0.
at::Tensor row_cosine(const at::Tensor& a, const at::Tensor& b);

}  // namespace ql
