// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's ggml quantizers, loaded from the peers venv's libggml-base.so (the library
// llama-cpp-python built from llama.cpp's sources; tests/peer_paths.h ggml_library()): the oracle
// for every GGUF byte QuantLab writes. Throws (failing the test) when it cannot be loaded.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/peer_paths.h"

namespace ql::test {

class GgmlLibrary {
public:
    // ggml's type ids (ggml.h enum ggml_type).
    enum Type : int { Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14,
                      IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
                      IQ1_M = 29, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39 };

    static const GgmlLibrary& get() {
        static const GgmlLibrary lib(ggml_library());
        return lib;
    }

    // ggml_quantize_chunk(type, x, dst, 0, rows, cols, importance or NULL): the bytes
    // llama-quantize writes.
    std::vector<uint8_t> quantize(int type, const float* x, int64_t rows, int64_t cols, const float* importance) const {
        std::vector<uint8_t> out(static_cast<size_t>(row_size_(type, cols) * rows));
        const size_t n = quantize_chunk_(type, x, out.data(), 0, rows, cols, importance);
        if (n != out.size()) throw std::runtime_error("ggml_quantize_chunk wrote " + std::to_string(n) + " bytes");
        return out;
    }
    // ggml's type traits to_float (dequantize_row_*), on rows * cols elements.
    std::vector<float> dequantize(int type, const uint8_t* bytes, int64_t rows, int64_t cols) const {
        std::vector<float> out(static_cast<size_t>(rows * cols));
        const auto* traits = get_type_traits_(type);
        // struct ggml_type_traits { const char* type_name; int64_t blck_size; int64_t blck_size_interleave;
        //   size_t type_size; bool is_quantized; ggml_to_float_t to_float; ... } (ggml.h)
        struct Traits {
            const char* type_name;
            int64_t blck_size, blck_size_interleave;
            size_t type_size;
            bool is_quantized;
            void (*to_float)(const void*, float*, int64_t);
        };
        const auto* t = static_cast<const Traits*>(traits);
        t->to_float(bytes, out.data(), rows * cols);
        return out;
    }
    const std::string& path() const { return path_; }

private:
    explicit GgmlLibrary(const std::string& path) : path_(path) {
        handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle_) throw std::runtime_error("cannot load ggml from " + path + ": " + dlerror());
        quantize_chunk_ = reinterpret_cast<QuantizeChunk>(symbol("ggml_quantize_chunk"));
        row_size_ = reinterpret_cast<RowSize>(symbol("ggml_row_size"));
        get_type_traits_ = reinterpret_cast<TypeTraits>(symbol("ggml_get_type_traits"));
    }
    void* symbol(const char* name) const {
        void* s = dlsym(handle_, name);
        if (!s) throw std::runtime_error(path_ + " has no " + name);
        return s;
    }
    using QuantizeChunk = size_t (*)(int, const float*, void*, int64_t, int64_t, int64_t, const float*);
    using RowSize = size_t (*)(int, int64_t);
    using TypeTraits = const void* (*)(int);
    std::string path_;
    void* handle_ = nullptr;
    QuantizeChunk quantize_chunk_ = nullptr;
    RowSize row_size_ = nullptr;
    TypeTraits get_type_traits_ = nullptr;
};

}  // namespace ql::test
