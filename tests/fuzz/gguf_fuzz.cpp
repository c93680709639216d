// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the GGUF reader and what reads GGUF metadata (plain C++, no LibTorch):
// any input either parses into a self-consistent file or throws ql::UserError. For files that
// parse: every tensor lies inside the file without overlap, decodes (or is refused with a
// UserError), the model metadata gives a config or a UserError, the tokenizer metadata gives a
// tokenizer.json that the tokenizer loads (a failure to load QuantLab's own JSON is a bug: abort)
// and that encodes a short text. The same bytes are also read as an importance matrix.
// Build and run with scripts/fuzz-gguf.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/gguf_file.h"
#include "engine/io/imatrix_file.h"
#include "engine/loading/gguf_model_config.h"
#include "engine/loading/gguf_vocabulary.h"
#include "engine/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const ql::GgufFile f = ql::GgufFile::parse(bytes, "fuzz");
        uint64_t end = 0;
        for (const auto& t : f.tensors()) {
            if (f.find_tensor(t.name) != &t) std::abort();
            if (t.offset % f.alignment() != 0 || f.data_offset() + t.offset + t.size > size) std::abort();
            if (ql::ggml_tensor_bytes(t.type, t.ne) != t.size) std::abort();
            end = std::max(end, t.offset + t.size);
            if (t.size > (uint64_t{1} << 22)) continue;  // keep each run fast; the bounds are checked above
            try {
                const std::vector<float> v = f.dequantize(t);
                if (static_cast<int64_t>(v.size()) != t.numel()) std::abort();
                volatile float sink = 0;
                for (float x : v) sink = sink + x;  // ASan / UBSan check every decoded value
            } catch (const ql::UserError&) {
            }
        }
        try {
            ql::gguf_model_config(f);
        } catch (const ql::UserError&) {
        }
        try {
            const ql::GgufVocabulary v = ql::gguf_vocabulary(f);
            if (v.tokenizer_json) {
                const ql::Tokenizer tok = ql::Tokenizer::from_json(*v.tokenizer_json, "fuzz tokenizer");
                try {
                    tok.encode("Hello world 123 caf\xC3\xA9", false);
                } catch (const ql::UserError&) {
                }
            }
        } catch (const ql::UserError&) {
        }
    } catch (const ql::UserError&) {
    }
    try {
        const ql::ImportanceMatrix m = ql::parse_imatrix(bytes, "fuzz.imatrix");
        for (const auto& e : m.entries) {
            if (e.columns <= 0 || static_cast<int64_t>(e.sum_sq.size()) != e.columns * e.matrices()) std::abort();
            e.mean_sq();
        }
        ql::legacy_imatrix_bytes(m);
    } catch (const ql::UserError&) {
    }
    return 0;
}
