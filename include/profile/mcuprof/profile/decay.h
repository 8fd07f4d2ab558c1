#pragma once
// Exponential forgetting of samples, the host's analogue of the on-chip table's decay (seeds
// 002/004): each sample's weight halves every `half_life` (in whatever unit the caller's
// clock counts: seconds, or samples), so a function that stops running fades from the ranking.
//
// Shares are weighted proportions. Samples each taken after their own random wait (halting)
// get standard errors from Kish's effective sample size, n_eff = (sum of weights)^2 / (sum of
// squared weights): n_eff samples of equal weight would give the same variance. Without decay
// every weight is 1 and n_eff is the sample count.
//
// Back-to-back reads (DWT_PCSR batches, `profile` chunks) come in bursts whose reads are
// correlated, and the bursts are independent (a random wait before each). Once the samples
// mark two bursts, each share's error comes from the spread between them, the ratio estimator
// of cluster sampling that `report` uses (docs/live.md, "Error bars of correlated reads"),
// weighted: with burst c's total weight W_c and row weight Y_c, p = sum Y_c / sum W_c,
//     var(p) = k/(k-1) * sum_c (Y_c - p W_c)^2 / (sum_c W_c)^2,
// where k is the number of bursts without decay (so the figures equal report's), and with
// decay Kish's effective number of them, (sum W_c)^2 / sum W_c^2: bursts forgotten long ago
// weigh nothing and tell nothing. The 95 % interval takes Student's t of k - 1 degrees of
// freedom. Under 2 effective bursts (a half-life shorter than a burst or two) the errors are
// binomial again, and errors() says so.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcuprof/profile/stats.h"

namespace mcuprof::core {

class DecayingTally {
public:
    // No half-life: plain counting.
    explicit DecayingTally(std::optional<double> half_life);

    // One sample of `key` taken at `at` (non-decreasing from one call to the next).
    // `on_stack`: the distinct keys of the sample's whole call chain, `key` among them, each
    // credited once with the sample's weight for its inclusive share (top --stacks).
    // `starts_burst`: the sample is the first read of a burst of back-to-back reads; the
    // samples before the first such mark are a burst of their own.
    void add(const std::string& key, double at, const std::vector<std::string>& on_stack = {},
             bool starts_burst = false);

    struct Entry {
        std::string key;
        double weight = 0;   // the sum of its samples' weights, as of the last sample
        Share share;         // of the total weight; its standard error as errors() says
        double inclusive_weight = 0;   // of the samples with the key anywhere on their stack
        Share inclusive;
    };
    // Heaviest (by weight) first; with stacks, keys met only as callers too.
    std::vector<Entry> ranked() const;

    uint64_t samples() const { return samples_; }
    double total_weight() const;        // as of the last sample (the newest weighs 1)
    double effective_samples() const;   // Kish: (sum w)^2 / sum w^2

    // Which standard errors ranked() gives: from the spread between bursts once there are two
    // (bursts: how many were met; effective_bursts: the k above, at least 2 for them to be
    // used), else binomial from n_eff (bursts 0).
    struct Errors {
        uint64_t bursts = 0;
        double effective_bursts = 0;
    };
    Errors errors() const;

private:
    // A row's weights in units of the weight at `origin_`: its total, what it has in the open
    // burst, and over the closed bursts the sums of Y_c^2 and Y_c W_c (the variance's terms).
    struct Row {
        double weight = 0;
        double open = 0;
        double squares = 0;
        double cross = 0;
    };
    void credit(Row& row, double w);
    void close_burst();
    void rebase(double at);
    Share share(const Row& row) const;
    bool by_bursts() const { return marked_ && bursts_ >= 2; }

    std::optional<double> half_life_;
    double origin_ = 0;       // weights are kept as 2^((t - origin) / half_life)
    double last_ = 0;
    uint64_t samples_ = 0;
    double sum_ = 0;          // weights in units of the weight at `origin_`
    double sum_squares_ = 0;
    std::unordered_map<std::string, Row> weights_;
    std::unordered_map<std::string, Row> inclusive_;   // in the same units as weights_
    bool marked_ = false;          // a sample marked a burst start
    uint64_t bursts_ = 0;          // met so far, the open one among them
    double open_weight_ = 0;       // W_c of the open burst
    double burst_squares_ = 0;     // sum of W_c^2 over the closed bursts
    std::vector<Row*> touched_;    // the rows credited in the open burst (element pointers
                                   // stay valid when an unordered_map rehashes)
};

} // namespace mcuprof::core
