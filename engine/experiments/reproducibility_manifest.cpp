// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/experiments/reproducibility_manifest.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/engine_runtime.h"
#include "engine/data/sentence_data.h"
#include "engine/export/export_report.h"
#include "engine/io/sha256.h"

namespace ql::experiments {

std::string environment_manifest_json() {
    const RuntimeInfo rt = initialise_engine_runtime();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    utsname u{};
    std::string os = "unknown";
    if (uname(&u) == 0) os = std::string(u.sysname) + " " + u.release + " " + u.machine;
    const std::string& cpu = rt.cpu_model;
    return nlohmann::json({{"quantlab_version", rt.quantlab_version},
                           {"commit", quantlab_source_commit()},
                           {"libtorch", rt.torch_version},
                           {"blas", rt.blas},
                           {"reference_blas", rt.reference_blas},
                           {"device", rt.cuda_kernels ? "cpu (CUDA kernels built)" : "cpu"},
                           {"threads", rt.threads},
                           {"host", host},
                           {"os", os},
                           {"cpu", cpu}})
        .dump();
}

std::string data_sha256(const std::string& data_spec) {
    std::error_code ec;
    // A line range (FILE#lines=A-B) hashes its file; the range is in the recorded spec.
    const std::optional<SentenceLineRange> range = parse_sentence_line_range(data_spec);
    const std::string path = range ? range->path : data_spec;
    if (path.rfind("synthetic:", 0) == 0 || !std::filesystem::is_regular_file(path, ec)) return "";
    return sha256_file_hex(path);
}

}  // namespace ql::experiments
