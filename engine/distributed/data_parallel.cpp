// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/distributed/data_parallel.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <chrono>

#include "engine/core/errors.h"

namespace ql {

DataParallel::DataParallel(ProcessGroup& group, int64_t bucket_bytes) : group_(group), bucket_bytes_(bucket_bytes) {
    if (bucket_bytes <= 0) throw std::logic_error("DataParallel: the bucket size must be positive");
}

Dataset DataParallel::shard(const Dataset& global) const {
    const int64_t b = global.size(), n = world_size();
    if (b % n != 0)
        throw UserError("distributed: the global batch of " + std::to_string(b) + " examples does not split over " +
                        std::to_string(n) + " ranks (--batch-size must be a multiple of --nproc / WORLD_SIZE)");
    const int64_t per = b / n, first = rank() * per;
    auto rows = [&](const at::Tensor& t) { return t.defined() && t.dim() > 0 && t.size(0) == b ? t.narrow(0, first, per).contiguous() : t; };
    Dataset s = global;
    s.inputs = rows(global.inputs);
    s.targets = rows(global.targets);
    s.domains = rows(global.domains);
    s.attention_mask = rows(global.attention_mask);
    if (!global.pair_scores.empty()) s.pair_scores.clear();  // pairs are evaluation data, never sharded
    return s;
}

void DataParallel::broadcast_from_main(const std::vector<at::Tensor>& tensors, const std::string& what) {
    c10::NoGradGuard no_grad;
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : tensors) flat.push_back(t.is_contiguous() ? t.detach() : t.detach().contiguous());
    group_.broadcast(flat, 0, what);
    for (size_t i = 0; i < tensors.size(); ++i)
        if (!tensors[i].is_contiguous()) tensors[i].detach().copy_(flat[i]);
}

double DataParallel::average_gradients(const std::vector<at::Tensor>& params, int64_t step) {
    using Clock = std::chrono::steady_clock;
    c10::NoGradGuard no_grad;
    const std::string at_step = " at step " + std::to_string(step);
    double seconds = 0;
    auto timed = [&](auto&& f) {
        const auto t0 = Clock::now();
        f();
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    };
    // Which parameters have a gradient on any rank.
    std::vector<at::Tensor> has{at::zeros({static_cast<int64_t>(params.size())}, at::kFloat)};
    {
        float* h = has[0].data_ptr<float>();
        for (size_t i = 0; i < params.size(); ++i) h[i] = params[i].grad().defined() ? 1.0f : 0.0f;
    }
    timed([&] { group_.allreduce_sum(has, "all-reduce of the gradient layout" + at_step); });
    std::vector<at::Tensor> grads;
    {
        const float* h = has[0].data_ptr<float>();
        for (size_t i = 0; i < params.size(); ++i) {
            if (h[i] == 0) continue;
            at::Tensor p = params[i];
            if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
            grads.push_back(p.grad());
        }
    }
    // Buckets of consecutive gradients of one dtype, flattened, summed, divided by the world.
    const double inverse = 1.0 / static_cast<double>(world_size());
    size_t i = 0;
    while (i < grads.size()) {
        size_t j = i;
        int64_t bytes = 0;
        while (j < grads.size() && grads[j].scalar_type() == grads[i].scalar_type() &&
               (j == i || bytes + grads[j].numel() * static_cast<int64_t>(grads[j].element_size()) <= bucket_bytes_)) {
            bytes += grads[j].numel() * static_cast<int64_t>(grads[j].element_size());
            ++j;
        }
        std::vector<at::Tensor> pieces;
        for (size_t k = i; k < j; ++k) pieces.push_back(grads[k].reshape({-1}));
        std::vector<at::Tensor> bucket{at::cat(pieces)};
        timed([&] { group_.allreduce_sum(bucket, "all-reduce of gradients" + at_step); });
        bucket[0].mul_(inverse);
        int64_t offset = 0;
        for (size_t k = i; k < j; ++k) {
            const int64_t n = grads[k].numel();
            grads[k].copy_(bucket[0].narrow(0, offset, n).view(grads[k].sizes()));
            offset += n;
        }
        i = j;
    }
    return seconds;
}

std::vector<double> DataParallel::sum(const std::vector<double>& values, const std::string& what) {
    std::vector<at::Tensor> t{at::tensor(values, at::kDouble)};
    group_.allreduce_sum(t, what);
    const double* d = t[0].data_ptr<double>();
    return std::vector<double>(d, d + values.size());
}

}  // namespace ql
