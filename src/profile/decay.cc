#include "mcuprof/profile/decay.h"

#include <algorithm>
#include <cmath>

#include "mcuprof/image/error.h"

namespace mcuprof::core {
namespace {

// Weights grow as 2^(age / half_life) rather than older ones shrinking, so adding a sample
// costs one term; they are rescaled before they could leave a double's range (2^1023, and
// the squares need twice the exponent).
constexpr double rebase_exponent = 400;

} // namespace

DecayingTally::DecayingTally(std::optional<double> half_life) : half_life_(half_life)
{
    if (half_life_ && !(*half_life_ > 0))
        throw Error("", "decay", "the half-life must be positive");
}

void DecayingTally::rebase(double at)
{
    const double scale = std::exp2(-(at - origin_) / *half_life_);
    for (auto* rows : {&weights_, &inclusive_})
        for (auto& [key, row] : *rows) {
            row.weight *= scale;
            row.open *= scale;
            row.squares *= scale * scale;
            row.cross *= scale * scale;
        }
    sum_ *= scale;
    sum_squares_ *= scale * scale;
    open_weight_ *= scale;
    burst_squares_ *= scale * scale;
    origin_ = at;
}

void DecayingTally::credit(Row& row, double w)
{
    if (row.open == 0)
        touched_.push_back(&row);
    row.weight += w;
    row.open += w;
}

// Folds the open burst into each row it touched (sum Y_c^2, sum Y_c W_c) and into sum W_c^2.
void DecayingTally::close_burst()
{
    for (Row* row : touched_) {
        row->squares += row->open * row->open;
        row->cross += row->open * open_weight_;
        row->open = 0;
    }
    touched_.clear();
    burst_squares_ += open_weight_ * open_weight_;
    open_weight_ = 0;
}

void DecayingTally::add(const std::string& key, double at, const std::vector<std::string>& on_stack,
                        bool starts_burst)
{
    if (samples_ > 0)
        at = std::max(at, last_);   // a clock that steps back is taken as standing still
    last_ = at;
    double w = 1;
    if (half_life_) {
        if ((at - origin_) / *half_life_ > rebase_exponent)
            rebase(at);
        w = std::exp2((at - origin_) / *half_life_);
    }
    if (samples_ == 0)
        bursts_ = 1;   // the reads before the first mark are a burst too
    else if (starts_burst) {
        close_burst();
        ++bursts_;
    }
    marked_ = marked_ || starts_burst;
    credit(weights_[key], w);
    for (const std::string& frame : on_stack)
        credit(inclusive_[frame], w);
    sum_ += w;
    sum_squares_ += w * w;
    open_weight_ += w;
    ++samples_;
}

double DecayingTally::total_weight() const
{
    // In units of the newest sample's weight.
    return half_life_ ? sum_ * std::exp2(-(last_ - origin_) / *half_life_) : sum_;
}

double DecayingTally::effective_samples() const
{
    return sum_squares_ > 0 ? sum_ * sum_ / sum_squares_ : 0;
}

DecayingTally::Errors DecayingTally::errors() const
{
    if (!by_bursts())
        return {};
    // Without decay the count itself, as report takes it (bursts of unequal sizes too).
    if (!half_life_)
        return {bursts_, double(bursts_)};
    return {bursts_, sum_ * sum_ / (burst_squares_ + open_weight_ * open_weight_)};
}

Share DecayingTally::share(const Row& row) const
{
    // share_of takes a count out of a total: the weighted proportion scaled to n_eff.
    const double n_eff = effective_samples();
    const double count = sum_ > 0 ? row.weight / sum_ * n_eff : 0;
    const double k = errors().effective_bursts;
    if (!(k >= 2))   // no bursts, or too few effective ones for their spread to say anything
        return share_of(count, n_eff, false);
    // The open burst counts as closed: sum Y_c^2, sum Y_c W_c and sum W_c^2 with it.
    const double p = row.weight / sum_;
    const double squares = row.squares + row.open * row.open;
    const double cross = row.cross + row.open * open_weight_;
    const double burst_squares = burst_squares_ + open_weight_ * open_weight_;
    const double spread = squares - 2 * p * cross + p * p * burst_squares;   // sum (Y_c - p W_c)^2
    // share_with_variance gives the binomial share of n_eff when the variance is none (a row
    // in every read, or rounding below zero).
    return share_with_variance(count, n_eff, k / (k - 1) * std::max(spread, 0.0) / (sum_ * sum_), k - 1);
}

std::vector<DecayingTally::Entry> DecayingTally::ranked() const
{
    std::vector<Entry> out;
    const double to_now = half_life_ ? std::exp2(-(last_ - origin_) / *half_life_) : 1.0;
    auto entry = [&](const std::string& key, const Row* row) {
        Entry e;
        e.key = key;
        if (row != nullptr) {
            e.weight = row->weight * to_now;
            e.share = share(*row);
        }
        if (auto inclusive = inclusive_.find(key); inclusive != inclusive_.end()) {
            e.inclusive_weight = inclusive->second.weight * to_now;
            e.inclusive = share(inclusive->second);
        }
        return e;
    };
    for (const auto& [key, row] : weights_)
        out.push_back(entry(key, &row));
    for (const auto& [key, row] : inclusive_)   // callers that were never the leaf
        if (!weights_.contains(key))
            out.push_back(entry(key, nullptr));
    std::sort(out.begin(), out.end(),
              [](const Entry& a, const Entry& b) { return a.weight != b.weight ? a.weight > b.weight : a.key < b.key; });
    return out;
}

} // namespace mcuprof::core
