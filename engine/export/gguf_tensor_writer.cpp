// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_tensor_writer.h"

#include <ATen/Functions.h>

#include "engine/core/errors.h"
#include "engine/export/gguf_encode.h"

namespace ql {

uint64_t write_gguf_tensors(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensorPlan>& tensors,
                            bool force, JobSink& sink, const CancellationToken& cancel, const std::string& phase) {
    GgufWriter writer(path, force);
    for (const auto& [key, value] : metadata) writer.add_metadata(key, value);
    for (const auto& t : tensors) writer.add_tensor(t.name, t.ne, t.type);
    std::vector<uint8_t> buffer;  // reused: fresh buffers per tensor would page-fault (PERF.md lesson 3)
    const int64_t total = static_cast<int64_t>(tensors.size());
    for (int64_t k = 0; k < total; ++k) {
        cancel.throw_if_cancelled();
        sink.progress(k, total, phase);
        const GgufTensorPlan& t = tensors[static_cast<size_t>(k)];
        const at::Tensor x = t.values().to(at::kFloat).contiguous();
        int64_t numel = 1;
        for (int64_t d : t.ne) numel *= d;
        if (x.numel() != numel)
            throw UserError(path + ": tensor '" + t.name + "': " + std::to_string(x.numel()) + " values for " +
                            std::to_string(numel) + " elements");
        const uint64_t size = *ggml_tensor_bytes(t.type, t.ne);
        if (buffer.size() < size) buffer.resize(size);
        const int64_t cols = t.ne[0];
        if (!t.importance.empty() && static_cast<int64_t>(t.importance.size()) != cols)
            throw UserError(path + ": tensor '" + t.name + "': " + std::to_string(t.importance.size()) +
                            " importance values for rows of " + std::to_string(cols));
        encode_gguf_tensor(x.data_ptr<float>(), cols ? numel / cols : 0, cols, t.type, buffer.data(),
                           t.importance.empty() ? nullptr : t.importance.data());
        writer.write_tensor_data(buffer.data(), size);
    }
    cancel.throw_if_cancelled();
    writer.commit();
    sink.progress(total, total, phase);
    return writer.bytes_written();
}

}  // namespace ql
