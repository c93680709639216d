// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors load time for a ~500 MB checkpoint, against reading the same file the way
// `cat file > /dev/null` does (read() into a 1 MiB buffer) in the same run. Both warm: the
// file was just written and every benchmark reads it repeatedly, so it is in the page cache and
// the numbers measure the reader, not the disk. Bytes processed = file size for all.
//   SafetensorsCat            baseline: open, read() 1 MiB at a time to EOF, close
//   SafetensorsCatToNewMemory second baseline, the floor for owned copies: read() the whole file
//                             into a freshly allocated buffer (pays the page faults of new memory
//                             that cat's reused 1 MiB buffer does not)
//   SafetensorsOpenTouch      open (mmap + validate) and read every tensor byte through the
//                             zero-copy views (a 64-bit XOR over all data; single thread like cat)
//   SafetensorsLoadTensors    open and load_tensor() every tensor: owned LibTorch copies (what
//                             safetensors.torch.load_file returns)
//   SafetensorsLoadFloat32    open and load_float32() every tensor (BF16 -> float32 copies)
// The file: 30 BF16 [4096, 2048] weights and 30 BF16 [4096] norms (503 MB), in $TMPDIR or /tmp,
// removed at exit. scripts/bench-report prints the ratios.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/engine_runtime.h"
#include "engine/io/safetensors_tensors.h"

namespace {

namespace fs = std::filesystem;

class CheckpointFile {
public:
    CheckpointFile() {
        ql::initialise_engine_runtime();
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/quantlab-st-bench-XXXXXX";
        if (!::mkdtemp(pattern.data())) std::abort();
        dir_ = pattern;
        path_ = dir_ + "/model.safetensors";
        at::manual_seed(0);
        std::vector<std::pair<std::string, at::Tensor>> tensors;
        for (int layer = 0; layer < 30; ++layer) {
            const std::string p = "model.layers." + std::to_string(layer);
            tensors.emplace_back(p + ".mlp.weight", at::randn({4096, 2048}).to(at::kBFloat16));
            tensors.emplace_back(p + ".norm.weight", at::ones({4096}, at::kBFloat16));
        }
        ql::write_safetensors(path_, tensors, {{"format", "pt"}});
        size_ = static_cast<int64_t>(fs::file_size(path_));
    }
    ~CheckpointFile() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    const std::string& path() const { return path_; }
    int64_t size() const { return size_; }

private:
    std::string dir_, path_;
    int64_t size_ = 0;
};

const CheckpointFile& file() {
    static const CheckpointFile f;
    return f;
}

void BM_SafetensorsCat(benchmark::State& state) {
    const CheckpointFile& f = file();
    std::vector<char> buf(1 << 20);
    for (auto _ : state) {
        const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) std::abort();
        int64_t total = 0;
        ssize_t n;
        while ((n = ::read(fd, buf.data(), buf.size())) > 0) total += n;
        ::close(fd);
        if (total != f.size()) std::abort();
        benchmark::DoNotOptimize(buf.data());
    }
    state.SetBytesProcessed(state.iterations() * f.size());
}

void BM_SafetensorsCatToNewMemory(benchmark::State& state) {
    const CheckpointFile& f = file();
    for (auto _ : state) {
        std::unique_ptr<char[]> buf(new char[static_cast<size_t>(f.size())]);
        const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) std::abort();
        int64_t total = 0;
        ssize_t n;
        while ((n = ::read(fd, buf.get() + total, static_cast<size_t>(f.size() - total))) > 0) total += n;
        ::close(fd);
        if (total != f.size()) std::abort();
        benchmark::DoNotOptimize(buf.get());
    }
    state.SetBytesProcessed(state.iterations() * f.size());
}

void BM_SafetensorsOpenTouch(benchmark::State& state) {
    const CheckpointFile& f = file();
    for (auto _ : state) {
        const ql::SafetensorsFile st = ql::SafetensorsFile::open(f.path());
        uint64_t x = 0;
        for (const auto& t : st.tensors()) {
            const ql::TensorBytes b = st.bytes(t);
            const auto* w = reinterpret_cast<const uint64_t*>(b.data);  // offsets are 8-aligned
            for (uint64_t i = 0; i < b.size / 8; ++i) x ^= w[i];
        }
        benchmark::DoNotOptimize(x);
    }
    state.SetBytesProcessed(state.iterations() * f.size());
}

void BM_SafetensorsLoadTensors(benchmark::State& state) {
    const CheckpointFile& f = file();
    for (auto _ : state) {
        const ql::SafetensorsFile st = ql::SafetensorsFile::open(f.path());
        std::vector<at::Tensor> loaded;
        for (const auto& t : st.tensors()) loaded.push_back(ql::load_tensor(st, t.name));
        benchmark::DoNotOptimize(loaded.back().data_ptr());
    }
    state.SetBytesProcessed(state.iterations() * f.size());
}

void BM_SafetensorsLoadFloat32(benchmark::State& state) {
    const CheckpointFile& f = file();
    for (auto _ : state) {
        const ql::SafetensorsFile st = ql::SafetensorsFile::open(f.path());
        std::vector<at::Tensor> loaded;
        for (const auto& t : st.tensors()) loaded.push_back(ql::load_float32(st, t.name));
        benchmark::DoNotOptimize(loaded.back().data_ptr());
    }
    state.SetBytesProcessed(state.iterations() * f.size());
}

const int kRegistered = [] {
    // Spelled out: class template argument deduction of std::pair{"name", function} gives an
    // array and a function type under the PyPI LibTorch build's flags, which do not compile.
    using Entry = std::pair<const char*, void (*)(benchmark::State&)>;
    for (const auto& [name, fn] : {Entry{"SafetensorsCat", BM_SafetensorsCat},
                                   Entry{"SafetensorsCatToNewMemory", BM_SafetensorsCatToNewMemory},
                                   Entry{"SafetensorsOpenTouch", BM_SafetensorsOpenTouch},
                                   Entry{"SafetensorsLoadTensors", BM_SafetensorsLoadTensors},
                                   Entry{"SafetensorsLoadFloat32", BM_SafetensorsLoadFloat32}})
        benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    return 0;
}();

}  // namespace
