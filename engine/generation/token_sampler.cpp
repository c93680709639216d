// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/generation/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <unordered_set>

#include "engine/core/errors.h"

namespace ql {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a well-mixed 64-bit value of (seed, step).
uint64_t sampler_mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

double sampler_uniform(uint64_t seed, int64_t step) {
    const uint64_t bits = sampler_mix(sampler_mix(seed) ^ static_cast<uint64_t>(step));
    return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // 53 bits in [0, 1)
}

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

// softmax in float64 over the entries that are not -inf.
std::vector<double> sampler_softmax(const std::vector<float>& logits) {
    const float top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = logits[i] == kRemoved ? 0.0 : std::exp(double(logits[i]) - top);
    for (double& x : p) x /= sum;
    return p;
}

int64_t sampler_argmax(const std::vector<float>& v) {
    return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());  // first maximum
}

}  // namespace

void validate_sampling(const SamplingSettings& s) {
    auto bad = [](const char* name, const std::string& why) { throw UserError(std::string("sampling: ") + name + " " + why); };
    if (!std::isfinite(s.temperature) || s.temperature < 0) bad("temperature", "must be 0 (greedy) or positive");
    if (s.top_k < 0) bad("top_k", "must be 0 (off) or positive");
    if (!(s.top_p > 0 && s.top_p <= 1)) bad("top_p", "must be in (0, 1]");
    if (!(s.min_p >= 0 && s.min_p < 1)) bad("min_p", "must be in [0, 1)");
    if (!(s.repetition_penalty > 0) || !std::isfinite(s.repetition_penalty)) bad("repetition_penalty", "must be positive");
}

std::string describe_sampling(const SamplingSettings& s) {
    std::ostringstream o;
    if (s.greedy()) {
        o << "greedy";
    } else {
        o << "sampled: temperature " << s.temperature;
        if (s.top_k > 0) o << ", top-k " << s.top_k;
        if (s.top_p < 1) o << ", top-p " << s.top_p;
        if (s.min_p > 0) o << ", min-p " << s.min_p;
        o << ", seed " << s.seed;
    }
    if (s.repetition_penalty != 1.0) o << ", repetition penalty " << s.repetition_penalty;
    return o.str();
}

TokenSampler::TokenSampler(SamplingSettings settings) : settings_(settings) { validate_sampling(settings_); }

int64_t TokenSampler::choose(const std::vector<float>& raw, const std::vector<int64_t>& context, int64_t step) const {
    if (raw.empty()) throw UserError("sampling: no logits");
    const SamplingSettings& s = settings_;
    std::vector<float> logits = raw;
    if (s.repetition_penalty != 1.0) {
        const std::unordered_set<int64_t> seen(context.begin(), context.end());
        const float penalty = static_cast<float>(s.repetition_penalty);
        for (int64_t id : seen)
            if (id >= 0 && id < static_cast<int64_t>(logits.size())) {
                float& x = logits[static_cast<size_t>(id)];
                x = x < 0 ? x * penalty : x / penalty;
            }
    }
    if (s.greedy()) return sampler_argmax(logits);
    if (s.temperature != 1.0) {
        const float t = static_cast<float>(s.temperature);
        for (float& x : logits) x /= t;
    }
    const size_t n = logits.size();
    if (s.top_k > 0 && static_cast<size_t>(s.top_k) < n) {
        std::vector<float> sorted = logits;
        std::nth_element(sorted.begin(), sorted.begin() + (s.top_k - 1), sorted.end(), std::greater<float>());
        const float kth = sorted[static_cast<size_t>(s.top_k - 1)];
        for (float& x : logits)
            if (x < kth) x = kRemoved;
    }
    if (s.top_p < 1.0) {
        const std::vector<double> p = sampler_softmax(logits);
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] < logits[b]; });
        double cumulative = 0;
        for (size_t r = 0; r + 1 < n; ++r) {  // the most likely token always stays
            cumulative += p[order[r]];
            if (cumulative <= 1.0 - s.top_p) logits[order[r]] = kRemoved;
        }
    }
    if (s.min_p > 0) {
        const std::vector<double> p = sampler_softmax(logits);
        const size_t top = static_cast<size_t>(sampler_argmax(logits));
        const double threshold = s.min_p * p[top];
        for (size_t i = 0; i < n; ++i)
            if (i != top && p[i] < threshold) logits[i] = kRemoved;
    }
    const std::vector<double> p = sampler_softmax(logits);
    const double u = sampler_uniform(s.seed, step);
    double cumulative = 0;
    int64_t last = -1;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] <= 0) continue;
        last = static_cast<int64_t>(i);
        cumulative += p[i];
        if (u < cumulative) return last;
    }
    return last;  // rounding left u above the total
}

std::vector<TokenProbability> top_probabilities(const std::vector<float>& logits, int64_t count) {
    const std::vector<double> p = sampler_softmax(logits);
    std::vector<int64_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), int64_t{0});
    const size_t k = std::min(static_cast<size_t>(std::max<int64_t>(count, 0)), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int64_t a, int64_t b) {
        return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)] || (p[static_cast<size_t>(a)] == p[static_cast<size_t>(b)] && a < b);
    });
    std::vector<TokenProbability> out;
    for (size_t i = 0; i < k; ++i) out.push_back({ids[i], p[static_cast<size_t>(ids[i])]});
    return out;
}

double token_probability(const std::vector<float>& logits, int64_t id) {
    if (id < 0 || id >= static_cast<int64_t>(logits.size())) return 0;
    return sampler_softmax(logits)[static_cast<size_t>(id)];
}

}  // namespace ql
