#pragma once
// Exponential forgetting of samples, the host's analogue of the on-chip table's decay (seeds
// 002/004): each sample's weight halves every `half_life` (in whatever unit the caller's
// clock counts: seconds, or samples), so a function that stops running fades from the ranking.
//
// Shares are weighted proportions. Their standard errors use Kish's effective sample size,
// n_eff = (sum of weights)^2 / (sum of squared weights): n_eff samples of equal weight would
// give the same variance. Without decay every weight is 1 and n_eff is the sample count.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcuprof/core/stats.h"

namespace mcuprof::core {

class DecayingTally {
public:
    // No half-life: plain counting.
    explicit DecayingTally(std::optional<double> half_life);

    // One sample of `key` taken at `at` (non-decreasing from one call to the next).
    // `on_stack`: the distinct keys of the sample's whole call chain, `key` among them, each
    // credited once with the sample's weight for its inclusive share (top --stacks).
    void add(const std::string& key, double at, const std::vector<std::string>& on_stack = {});

    struct Entry {
        std::string key;
        double weight = 0;   // the sum of its samples' weights, as of the last sample
        Share share;         // of the total weight, standard error from n_eff
        double inclusive_weight = 0;   // of the samples with the key anywhere on their stack
        Share inclusive;
    };
    // Heaviest (by weight) first; with stacks, keys met only as callers too.
    std::vector<Entry> ranked() const;

    uint64_t samples() const { return samples_; }
    double total_weight() const;        // as of the last sample (the newest weighs 1)
    double effective_samples() const;   // Kish: (sum w)^2 / sum w^2

private:
    void rebase(double at);

    std::optional<double> half_life_;
    double origin_ = 0;       // weights are kept as 2^((t - origin) / half_life)
    double last_ = 0;
    uint64_t samples_ = 0;
    double sum_ = 0;          // weights in units of the weight at `origin_`
    double sum_squares_ = 0;
    std::unordered_map<std::string, double> weights_;
    std::unordered_map<std::string, double> inclusive_;   // in the same units as weights_
};

} // namespace mcuprof::core
