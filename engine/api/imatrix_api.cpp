// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/imatrix_api.h"

#include <chrono>
#include <filesystem>

#include "engine/calib/importance_collector.h"
#include "engine/core/errors.h"
#include "engine/io/imatrix_file.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"

namespace ql {
namespace {

ImatrixReport report_of(const ImportanceMatrix& m, int top_k) {
    ImatrixReport r;
    r.entries = static_cast<int64_t>(m.entries.size());
    r.chunk_count = m.chunk_count;
    r.chunk_size = m.chunk_size;
    r.datasets = m.datasets;
    r.statistics = importance_statistics(m, top_k);
    return r;
}

}  // namespace

ImatrixReport run_imatrix(const ImatrixRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    const ImatrixFormat format = parse_imatrix_format(req.format);
    if (req.model.empty() && req.in_files.empty())
        throw UserError("imatrix: nothing to do: give MODEL with --calib, or --in-file files to merge");
    if (!req.model.empty() && req.calibration.empty()) throw UserError("imatrix: --calib D is required with a MODEL");
    if (!req.out.empty() && !req.force)
        if (std::error_code ec; std::filesystem::exists(req.out, ec))
            throw UserError(req.out + ": already exists (use --force to overwrite it)");
    // A device this build or machine lacks is refused before anything is read.
    const at::Device device = torch_device(req.device);
    sink.progress(0, 0, "load");
    // Files first: a broken one is reported before the (slow) collection.
    std::vector<ImportanceMatrix> inputs;
    for (const std::string& f : req.in_files) inputs.push_back(read_imatrix(f));

    ImportanceMatrix m;
    bool have = false;
    if (!req.model.empty()) {
        OpenedModel opened = open_model(req.model);
        move_model(*opened.model, device);  // the calibration forward moves each batch to the model
        DataOptions o;
        o.split = DataSplit::Train;
        o.samples = req.samples > 0 ? req.samples : 128;
        o.seed = req.seed;
        o.sequence_length = req.sequence_length;
        o.token_dtype = req.token_dtype;
        const Dataset data = load_dataset(req.calibration, o, opened.data);
        ImportanceCollection c;
        c.batch_size = req.batch_size > 0 ? req.batch_size : 16;
        c.process_output = req.process_output;
        c.dataset_name = req.calibration;
        m = collect_importance(*opened.model, data, c, sink, cancel);
        have = true;
    }
    for (const ImportanceMatrix& in : inputs) {
        if (!have) {
            m = in;
            have = true;
        } else {
            merge_importance(m, in);
        }
    }
    cancel.throw_if_cancelled();
    ImatrixReport r = report_of(m, req.top_k);
    r.format = imatrix_format_name(format);
    if (!req.out.empty()) {
        sink.progress(0, 1, "write");
        write_imatrix(m, req.out, format, req.force);
        sink.progress(1, 1, "write");
        sink.artifact("imatrix", req.out);
        r.out = req.out;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

ImatrixReport imatrix_file_statistics(const std::string& path, int top_k) {
    const auto start = std::chrono::steady_clock::now();
    ImatrixReport r = report_of(read_imatrix(path), top_k);
    r.out = path;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace ql
