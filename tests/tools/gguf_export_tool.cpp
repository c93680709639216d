// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-gguf-export MODEL OUT.gguf TYPE [--force]: the GGUF exporter without the CLI's other
// commands, for scripts/check-interop (which prefers `quantlab-cli export --as gguf` when that
// command exists). Prints one line per warning and "wrote OUT (N bytes, T tensors)".
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "engine/api/errors.h"
#include "engine/export/gguf_export.h"

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: quantlab-gguf-export MODEL OUT.gguf TYPE [--force]\n");
        return 2;
    }
    ql::GgufExportOptions o;
    o.type = argv[3];
    o.force = argc > 4 && std::strcmp(argv[4], "--force") == 0;
    ql::NullJobSink sink;
    ql::CancellationToken cancel;
    try {
        const auto r = ql::export_gguf(argv[1], argv[2], o, sink, cancel);
        for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
        std::printf("wrote %s (%llu bytes, %zu tensors, %s, tokenizer from %s)\n", r.path.c_str(),
                    static_cast<unsigned long long>(r.bytes), r.tensors.size(), r.architecture.c_str(), r.tokenizer_source.c_str());
        return 0;
    } catch (const ql::UserError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
