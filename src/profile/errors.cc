#include "errors.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace mcuprof::core::attribution {
namespace {

// Where each batch of consecutive wall-clock halts begins: k = min(30, floor(sqrt(n))) batches
// of floor(n / k) samples, the last taking the rest. Few long batches, as batch means wants
// (10 to 30 of them: Schmeiser, "Batch size effects in the analysis of simulation output",
// Oper. Res. 30(3), 1982): halts that repeat each other lie in one batch, so the spread between
// batches sees their correlation; the 95 % intervals then use Student's t of k - 1 degrees.
// docs/method.md, "Correlated samples", has the measurement that sets their length.
std::vector<size_t> batches_of_consecutive_halts(size_t n)
{
    const size_t k = std::min<size_t>(30, size_t(std::sqrt(double(n))));
    std::vector<size_t> starts;
    if (k < 2)
        return starts;
    for (size_t c = 0; c < k; ++c)
        starts.push_back(c * (n / k));
    return starts;
}

} // namespace

std::vector<size_t> error_clusters(const SampleSet& samples, Grouping by)
{
    const bool reads_only = !samples.exact && by != Grouping::stack && by != Grouping::core &&
                            samples.counts.empty() && samples.buckets.empty() && samples.without_address.empty();
    if (!reads_only)
        return {};
    const std::vector<size_t>& bursts = samples.bursts;
    if (bursts.size() >= 2 && bursts.front() == 0 && bursts.back() < samples.pcs.size() &&
        std::adjacent_find(bursts.begin(), bursts.end(), std::greater_equal<>()) == bursts.end())
        return bursts;
    if (bursts.empty() && samples.wall_clock_halts)
        return batches_of_consecutive_halts(samples.pcs.size());
    return {};
}

std::vector<double> cluster_variances(const SampleSet& samples, const std::vector<size_t>& clusters,
                                      const std::vector<uint32_t>& tags, const RowsOfSamples& row_of,
                                      const FoundAsleep& found_asleep, size_t row_count)
{
    const size_t k = clusters.size();
    const double reads = double(samples.pcs.size());
    std::vector<double> y2(row_count, 0), ym(row_count, 0), y(row_count, 0);
    double m2 = 0;
    std::vector<uint32_t> in_burst(row_count, 0);
    std::vector<size_t> touched;
    const bool tagged = !tags.empty();
    for (size_t c = 0; c < k; ++c) {
        const size_t begin = clusters[c];
        const size_t end = c + 1 < k ? clusters[c + 1] : samples.pcs.size();
        for (size_t i = begin; i < end; ++i) {
            const size_t r = row_of.at(tagged ? tags[i] : 0, samples.pcs[i], found_asleep(i));
            if (in_burst[r]++ == 0)
                touched.push_back(r);
        }
        const double m = double(end - begin);
        m2 += m * m;
        for (size_t r : touched) {
            const double n = in_burst[r];
            y[r] += n;
            y2[r] += n * n;
            ym[r] += n * m;
            in_burst[r] = 0;
        }
        touched.clear();
    }
    std::vector<double> variance(row_count, 0);
    for (size_t r = 0; r < row_count; ++r) {
        const double p = y[r] / reads;
        const double spread = std::max(0.0, y2[r] - 2 * p * ym[r] + p * p * m2);
        variance[r] = double(k) / double(k - 1) * spread / (reads * reads);
    }
    return variance;
}

void compute_shares(Profile& profile, std::vector<Row> rows, const SampleSet& samples, bool inclusive_known,
                    const std::vector<double>& variance, size_t clusters)
{
    // The total from the integer counts, not from the (fractional) bucket shares added up.
    uint64_t total = samples.pcs.size() + samples.outside_buckets;
    for (const AddressCount& c : samples.counts)
        total += c.count;
    for (const Bucket& b : samples.buckets)
        total += b.count;
    for (const auto& [name, count] : samples.without_address)
        total += count;
    profile.total = double(total);
    profile.rows = std::move(rows);
    for (size_t r = 0; r < profile.rows.size(); ++r) {
        Row& row = profile.rows[r];
        if (!inclusive_known)
            row.inclusive_samples = row.samples;
        if (variance.empty()) {
            row.share = share_of(row.samples, profile.total, samples.exact);
            row.inclusive = share_of(row.inclusive_samples, profile.total, samples.exact);
            continue;
        }
        row.share = share_with_variance(row.samples, profile.total, variance[r], double(clusters - 1));
        row.inclusive = inclusive_known ? share_of(row.inclusive_samples, profile.total, false) : row.share;
        const double binomial = share_of(row.samples, profile.total, false).stderr_pp;
        if (binomial > 0)
            profile.errors.largest_ratio = std::max(profile.errors.largest_ratio, row.share.stderr_pp / binomial);
    }
    std::sort(profile.rows.begin(), profile.rows.end(), [](const Row& a, const Row& b) {
        return a.samples != b.samples ? a.samples > b.samples : a.name < b.name;
    });
}

} // namespace mcuprof::core::attribution
