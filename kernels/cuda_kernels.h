// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA versions of the CPU number-format kernels, bit-identical to them (same float32 operations
// in the same order, the same QL_HD element functions; built with --fmad=false, IEEE division and
// no flush-to-zero). Plain C++: no CUDA types here, so engine code can call it without nvcc.
//
// Conventions for every function below:
// - Every data pointer is a DEVICE pointer (cudaMalloc'd or equivalent) of the current CUDA
//   device, sized exactly as the CPU counterpart documents (kernels/nvfp4.h, mx.h, ...); the
//   caller owns every buffer. Outputs may alias the float input (y == x) where the CPU allows it.
// - `stream` is a cudaStream_t passed as void*; nullptr is the legacy default stream. Work is
//   enqueued asynchronously on it unless the function says it synchronizes.
// - Empty inputs (no elements) launch nothing.
// - Speed: the block formats take a vectorised path (float4 loads, a team of lanes per block)
//   when x and y are 16-byte aligned (codes 4-byte) and rows hold whole blocks of the fast size
//   (NVFP4 16, MX 32, INT groups 32/64/128/256, NF4 64); anything else is exact but slower.
// - Errors: a failed launch or CUDA call throws std::runtime_error naming the kernel or call and
//   carrying cudaGetErrorString; shapes the kernels cannot process throw std::invalid_argument.
//   Kernel faults surface (as usual in CUDA) at the next synchronizing call.
// - Tables the CPU kernels build at start-up (NF4 thresholds, the dynamic map, the GGUF log2
//   thresholds) are copied from those host tables to the device once per device, so device and
//   host compare against identical values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/gguf_blocks.h"
#include "kernels/hadamard.h"
#include "kernels/half_rounding.h"
#include "kernels/integer_quant.h"
#include "kernels/microscaling.h"
#include "kernels/mx.h"
#include "kernels/nf4.h"
#include "kernels/nvfp4.h"
#include "kernels/scaled_fp8.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels::cuda {

// True when the CUDA runtime finds at least one usable device (false without a driver).
bool cuda_device_available();

// ---- Device memory for callers without the CUDA runtime headers ----------------------------
// Stream-ordered (cudaMallocAsync / cudaFreeAsync on `stream`): memory is usable by work
// enqueued on that stream after the call, and released after the work enqueued before the free.
void* device_allocate(size_t bytes, void* stream = nullptr);  // nullptr for 0 bytes
void device_release(void* p, void* stream = nullptr) noexcept;  // ignores nullptr
void copy_to_device(void* dst, const void* src_host, size_t bytes, void* stream = nullptr);  // synchronizes
void copy_to_host(void* dst_host, const void* src, size_t bytes, void* stream = nullptr);    // synchronizes
void copy_on_device(void* dst, const void* src, size_t bytes, void* stream = nullptr);       // asynchronous

// `count` elements of T in device memory, owned (released on destruction, in order on the
// stream it was allocated on), move-only.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    explicit DeviceArray(int64_t count, void* stream = nullptr)
        : data_(static_cast<T*>(device_allocate(static_cast<size_t>(count) * sizeof(T), stream))),
          size_(count),
          stream_(stream) {}
    explicit DeviceArray(const std::vector<T>& host, void* stream = nullptr)
        : DeviceArray(static_cast<int64_t>(host.size()), stream) {
        copy_to_device(data_, host.data(), host.size() * sizeof(T), stream);
    }
    DeviceArray(DeviceArray&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), stream_(o.stream_) {}
    DeviceArray& operator=(DeviceArray&& o) noexcept {
        if (this != &o) {
            device_release(data_, stream_);
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
            stream_ = o.stream_;
        }
        return *this;
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    ~DeviceArray() { device_release(data_, stream_); }

    T* data() const { return data_; }
    int64_t size() const { return size_; }
    std::vector<T> to_host() const {
        std::vector<T> h(static_cast<size_t>(size_));
        copy_to_host(h.data(), data_, h.size() * sizeof(T), stream_);
        return h;
    }

private:
    T* data_ = nullptr;
    int64_t size_ = 0;
    void* stream_ = nullptr;
};

// ---- Range statistics (kernels/channel_reduce.h); NaN and +-Inf are skipped -----------------
// max |x| over finite x of n floats, returned to the host: SYNCHRONIZES the stream.
float finite_absmax(const float* x, int64_t n, void* stream = nullptr);
// out: L.channels floats (device), per-channel max |finite x|.
void channel_finite_absmax(const float* x, const ChannelLayout& L, float* out, void* stream = nullptr);
// mins / maxs: L.channels floats each (device): min(0, finite x) and max(0, finite x).
void channel_finite_range(const float* x, const ChannelLayout& L, float* mins, float* maxs,
                          void* stream = nullptr);

// ---- FP8 with per-tensor / per-channel float32 scales (kernels/scaled_fp8.h) -----------------
// scales[c] = fp8_scale_for_amax(amax[c], k) for c < channels (scales may equal amax).
void fp8_scales_for_amax(const float* amax, int64_t channels, Fp8Kind k, float* scales, void* stream = nullptr);
// scales: L.channels floats (device). codes: one FP8 byte per element.
void fp8_fake_quant(const float* x, float* y, const ChannelLayout& L, const float* scales, Fp8Kind k,
                    void* stream = nullptr);
void fp8_encode(const float* x, const ChannelLayout& L, const float* scales, Fp8Kind k, uint8_t* codes,
                void* stream = nullptr);
void fp8_decode(const uint8_t* codes, const ChannelLayout& L, const float* scales, Fp8Kind k, float* y,
                void* stream = nullptr);

// ---- NVFP4 (kernels/nvfp4.h); L.block must be 16; global_scale from ql::kernels::nvfp4_global_scale
void nvfp4_fake_quant(const float* x, float* y, const RowBlocks& L, float global_scale, void* stream = nullptr);
// codes: rows*cols bytes (unpacked E2M1 codes); block_scales: L.block_count() E4M3 bytes.
void nvfp4_encode(const float* x, const RowBlocks& L, float global_scale, uint8_t* codes, uint8_t* block_scales,
                  void* stream = nullptr);
void nvfp4_decode(const uint8_t* codes, const uint8_t* block_scales, const RowBlocks& L, float global_scale,
                  float* y, void* stream = nullptr);

// ---- OCP MX (kernels/mx.h); any L.block, 32 is the fast path --------------------------------
void mx_fake_quant(const float* x, float* y, const RowBlocks& L, MxElement e, MxScaleRule rule,
                   void* stream = nullptr);
// codes: rows*cols bytes; scales: L.block_count() E8M0 bytes.
void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes,
               uint8_t* scales, void* stream = nullptr);
void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e, float* y,
               void* stream = nullptr);

// ---- Integers (kernels/integer_quant.h) ------------------------------------------------------
// params[c] = int_params_for_range(lo[c], hi[c], f) for c < channels. lo may be nullptr: then
// lo[c] = -hi[c] (the symmetric range built from a channel_finite_absmax result).
void int_params_for_range(const float* lo, const float* hi, int64_t channels, IntFormat f, IntParams* params,
                          void* stream = nullptr);
// Per tensor / per channel: params has L.channels entries (device). Codes: one byte per element,
// two's complement (symmetric) or unsigned (asymmetric).
void int_fake_quant_channels(const float* x, float* y, const ChannelLayout& L, const IntParams* params,
                             IntFormat f, void* stream = nullptr);
void int_encode_channels(const float* x, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         uint8_t* codes, void* stream = nullptr);
void int_decode_channels(const uint8_t* codes, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         float* y, void* stream = nullptr);
// Per group of L.block elements along rows (groups of 32/64/128/256 take the fast path);
// params: L.block_count() entries (device), written by encode.
void int_fake_quant_groups(const float* x, float* y, const RowBlocks& L, IntFormat f, void* stream = nullptr);
void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params,
                       void* stream = nullptr);
void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f, float* y,
                       void* stream = nullptr);

// ---- NF4 (kernels/nf4.h): blocks of `block` elements of the flattened n-element tensor -------
void nf4_fake_quant(const float* x, float* y, int64_t n, int64_t block, void* stream = nullptr);
// codes: n bytes (0..15); absmax: ceil(n / block) floats.
void nf4_encode(const float* x, int64_t n, int64_t block, uint8_t* codes, float* absmax, void* stream = nullptr);
void nf4_decode(const uint8_t* codes, const float* absmax, int64_t n, int64_t block, float* y,
                void* stream = nullptr);
// Double quantization of the (small) absmax vector runs ON THE HOST with the CPU function
// ql::kernels::nf4_double_quant: absmax is copied to the host, the results copied back.
// codes8: nblocks bytes, absmax2: ceil(nblocks / 256) floats (device); *offset_host: host float.
// SYNCHRONIZES the stream.
void nf4_double_quant(const float* absmax, int64_t nblocks, uint8_t* codes8, float* absmax2, float* offset_host,
                      void* stream = nullptr);
// absmax_out[i] = map[codes8[i]] * absmax2[i / 256] + offset, on the device.
void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks,
                        float* absmax_out, void* stream = nullptr);
// Codes from the exact absmax, values from the double-quantized absmax (CPU
// nf4_fake_quant_double); encode and decode on the device, double quantization on the host
// as above, so the stream is waited for once in the middle. Scratch memory is stream-ordered.
// Unlike the CPU function called in place, y == x keeps NaN inputs (they are read before the
// decoded values are written).
void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block, void* stream = nullptr);

// ---- GGUF blocks (kernels/gguf_blocks.h), one thread per block -------------------------------
// One thread per 32-element block, per K-quant super-block, per 8 IQ4_NL blocks; importance
// (nullptr or cols floats, in DEVICE memory) as on the CPU.
// x: rows*cols floats with cols % gguf_block_elements(t) == 0 (else std::invalid_argument);
// blocks: rows * (cols / block) * gguf_type_size(t) bytes.
void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, void* stream = nullptr);
void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance,
                   void* stream);
void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y,
                     void* stream = nullptr);
// L.block must be gguf_block_elements(t); a short row tail is padded with zeros as on the CPU. In
// place (y == x) NaN inputs stay NaN, as out of place (the CPU's in-place call overwrites them
// first).
void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, void* stream = nullptr);
void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance, void* stream);

// ---- BF16 / FP16 pass-through baselines (kernels/half_rounding.h) ----------------------------
void half_round_trip(const float* x, float* y, int64_t n, HalfKind k, void* stream = nullptr);
void half_encode(const float* x, int64_t n, HalfKind k, uint16_t* codes, void* stream = nullptr);
void half_decode(const uint16_t* codes, int64_t n, HalfKind k, float* y, void* stream = nullptr);

// ---- Block-diagonal normalized Walsh–Hadamard transform (kernels/hadamard.h) -----------------
// x, y: L.rows * L.cols floats (device; y may equal x); signs: L.cols floats (device) or null.
void hadamard_rows(const float* x, float* y, const HadamardLayout& L, const float* signs = nullptr,
                   void* stream = nullptr);

}  // namespace ql::kernels::cuda
