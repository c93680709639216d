// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the safetensors reader (plain C++, no LibTorch): any input either parses
// into a self-consistent file or throws ql::UserError. Build and run with scripts/fuzz-safetensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
#include "engine/io/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const ql::SafetensorsFile f = ql::SafetensorsFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
        uint64_t at = f.data_offset();
        for (const auto& t : f.tensors()) {
            if (t.offset != at || ql::safetensors_byte_size(t.dtype, t.shape) != t.size || f.find(t.name) != &t) std::abort();
            const ql::TensorBytes b = f.bytes(t);
            volatile uint8_t sink = 0;
            for (uint64_t i = 0; i < b.size; ++i) sink = sink ^ b.data[i];  // ASan checks every byte
            at += t.size;
        }
        if (at != size) std::abort();
    } catch (const ql::UserError&) {
    }
    return 0;
}
