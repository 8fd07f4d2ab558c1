#include "mcuprof/core/decay.h"

#include <algorithm>
#include <cmath>

#include "mcuprof/core/error.h"

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
    for (auto& entry : weights_)
        entry.second *= scale;
    for (auto& entry : inclusive_)
        entry.second *= scale;
    sum_ *= scale;
    sum_squares_ *= scale * scale;
    origin_ = at;
}

void DecayingTally::add(const std::string& key, double at, const std::vector<std::string>& on_stack)
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
    weights_[key] += w;
    for (const std::string& frame : on_stack)
        inclusive_[frame] += w;
    sum_ += w;
    sum_squares_ += w * w;
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

std::vector<DecayingTally::Entry> DecayingTally::ranked() const
{
    std::vector<Entry> out;
    const double n_eff = effective_samples();
    const double to_now = half_life_ ? std::exp2(-(last_ - origin_) / *half_life_) : 1.0;
    // share_of takes a count out of a total: the weighted proportion scaled to n_eff.
    auto share = [&](double weight) { return share_of(sum_ > 0 ? weight / sum_ * n_eff : 0, n_eff, false); };
    auto entry = [&](const std::string& key, double weight) {
        Entry e;
        e.key = key;
        e.weight = weight * to_now;
        e.share = share(weight);
        if (auto inclusive = inclusive_.find(key); inclusive != inclusive_.end()) {
            e.inclusive_weight = inclusive->second * to_now;
            e.inclusive = share(inclusive->second);
        }
        return e;
    };
    for (const auto& [key, weight] : weights_)
        out.push_back(entry(key, weight));
    for (const auto& [key, weight] : inclusive_)   // callers that were never the leaf
        if (!weights_.contains(key))
            out.push_back(entry(key, 0));
    std::sort(out.begin(), out.end(),
              [](const Entry& a, const Entry& b) { return a.weight != b.weight ? a.weight > b.weight : a.key < b.key; });
    return out;
}

} // namespace mcuprof::core
