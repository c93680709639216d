// SPDX-License-Identifier: GPL-3.0-or-later
// The keys and values a decoder has computed so far, per attention site, so that text
// generation computes each new token from its own query and the stored keys and values instead
// of running the whole sequence again (Model::forward_cached). Keys are stored after RoPE and
// after the site's hook (a KV-cache quantizer's fake quantization): what attention read is what
// is kept, as a quantized KV cache keeps its quantized values.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ql {

class KvCache {
public:
    // Room for `capacity` positions (prompt and generated tokens) in each of `sites` attention
    // sites. Storage is allocated on the first store() of each site, with that tensor's batch,
    // heads, head_dim, dtype and device: 2 * sites * B * Hkv * capacity * D elements.
    KvCache(int64_t sites, int64_t capacity);

    int64_t length() const { return length_; }      // positions stored: the next token's position
    int64_t capacity() const { return capacity_; }

    // Writes k, v [B, Hkv, T, D] at positions length() .. length() + T - 1 of site `site` and
    // returns views [B, Hkv, length() + T, D] of everything stored there, for attention. Every
    // site of a forward stores the same T; then advance(T). UserError when the cache is full or
    // the shapes differ from the site's first store.
    std::pair<at::Tensor, at::Tensor> store(size_t site, const at::Tensor& k, const at::Tensor& v);
    void advance(int64_t tokens);

    // Forgets positions from `length` on (a shorter prefix is reused; storage stays).
    void truncate(int64_t length);

    // Bytes held by the stored tensors.
    int64_t bytes() const;

private:
    int64_t capacity_ = 0, length_ = 0;
    std::vector<at::Tensor> keys_, values_;
};

}  // namespace ql
