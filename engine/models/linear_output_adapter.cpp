// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/linear_output_adapter.h"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace ql {
namespace {

struct LinearAdapterTable {
    std::shared_mutex mutex;
    std::unordered_map<const LinearLayer*, LinearOutputAdapter> adapters;
    std::atomic<size_t> count{0};
};

LinearAdapterTable& linear_adapter_table() {
    static LinearAdapterTable table;
    return table;
}

}  // namespace

void set_linear_output_adapter(const LinearLayer& layer, LinearOutputAdapter adapter) {
    LinearAdapterTable& t = linear_adapter_table();
    std::unique_lock lock(t.mutex);
    if (adapter)
        t.adapters[&layer] = std::move(adapter);
    else
        t.adapters.erase(&layer);
    t.count.store(t.adapters.size(), std::memory_order_release);
}

bool has_linear_output_adapter(const LinearLayer& layer) {
    LinearAdapterTable& t = linear_adapter_table();
    if (t.count.load(std::memory_order_acquire) == 0) return false;
    std::shared_lock lock(t.mutex);
    return t.adapters.count(&layer) > 0;
}

at::Tensor apply_linear_output_adapter(const LinearLayer& layer, const at::Tensor& x, const at::Tensor& y) {
    LinearAdapterTable& t = linear_adapter_table();
    if (t.count.load(std::memory_order_acquire) == 0) return y;
    LinearOutputAdapter adapter;
    {
        std::shared_lock lock(t.mutex);
        const auto it = t.adapters.find(&layer);
        if (it == t.adapters.end()) return y;
        adapter = it->second;  // a copy: the adapter runs (autograd, dropout) outside the lock
    }
    return adapter(x, y);
}

}  // namespace ql
