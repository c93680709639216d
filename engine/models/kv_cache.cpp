// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/kv_cache.h"

#include <ATen/ops/empty.h>

#include <string>

#include "engine/core/errors.h"

namespace ql {

KvCache::KvCache(int64_t sites, int64_t capacity) : capacity_(capacity) {
    if (sites <= 0 || capacity <= 0)
        throw UserError("KV cache: needs at least one attention site and one position (got " + std::to_string(sites) +
                        " sites, " + std::to_string(capacity) + " positions)");
    keys_.resize(static_cast<size_t>(sites));
    values_.resize(static_cast<size_t>(sites));
}

std::pair<at::Tensor, at::Tensor> KvCache::store(size_t site, const at::Tensor& k, const at::Tensor& v) {
    if (site >= keys_.size())
        throw UserError("KV cache: attention site " + std::to_string(site) + " of " + std::to_string(keys_.size()));
    if (k.dim() != 4 || !v.sizes().equals(k.sizes()))
        throw UserError("KV cache: keys and values must both be [batch, kv_heads, tokens, head_dim]");
    const int64_t t = k.size(2);
    if (length_ + t > capacity_)
        throw UserError("KV cache: " + std::to_string(length_ + t) + " positions do not fit its " +
                        std::to_string(capacity_) + " (raise the context length or lower --max-tokens)");
    at::Tensor& keys = keys_[site];
    at::Tensor& values = values_[site];
    if (!keys.defined()) {
        keys = at::empty({k.size(0), k.size(1), capacity_, k.size(3)}, k.options());
        values = at::empty({v.size(0), v.size(1), capacity_, v.size(3)}, v.options());
    } else if (keys.size(0) != k.size(0) || keys.size(1) != k.size(1) || keys.size(3) != k.size(3) ||
               keys.scalar_type() != k.scalar_type() || keys.device() != k.device()) {
        throw UserError("KV cache: site " + std::to_string(site) + " was filled with another batch, head or dtype layout");
    }
    keys.narrow(2, length_, t).copy_(k);
    values.narrow(2, length_, t).copy_(v);
    return {keys.narrow(2, 0, length_ + t), values.narrow(2, 0, length_ + t)};
}

void KvCache::advance(int64_t tokens) {
    if (tokens < 0 || length_ + tokens > capacity_) throw UserError("KV cache: cannot advance by " + std::to_string(tokens));
    length_ += tokens;
}

void KvCache::truncate(int64_t length) {
    if (length < 0 || length > length_) throw UserError("KV cache: cannot truncate to " + std::to_string(length));
    length_ = length;
}

int64_t KvCache::bytes() const {
    int64_t n = 0;
    for (size_t i = 0; i < keys_.size(); ++i)
        if (keys_[i].defined()) n += keys_[i].nbytes() + values_[i].nbytes();
    return n;
}

}  // namespace ql
