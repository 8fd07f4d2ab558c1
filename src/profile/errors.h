#pragma once
// Inside the profile library only: each row's share of the total and its error, binomial or
// from the spread between clusters of correlated samples.
#include <vector>

#include "aggregation.h"

namespace mcuprof::core::attribution {

// The clusters whose spread gives the standard errors (indices into pcs where each begins),
// when the rows are made from the samples' addresses (not from stacks or cores) and every
// sample is a read: the bursts of back-to-back reads (in order, the first at 0), or batches of
// consecutive wall-clock halts. Empty: binomial errors.
std::vector<size_t> error_clusters(const SampleSet& samples, Grouping by);

// The variance of each row's fraction from the spread between clusters of correlated samples
// (error_clusters: bursts, batches): the ratio estimator of cluster sampling (Cochran, Sampling
// Techniques, 3rd ed., 6.13). With k clusters of m_c samples, y_c of them in the row,
// M = sum m_c and p = sum y_c / M:
//   var(p) = k / (k - 1) * sum_c (y_c - p m_c)^2 / M^2
// per row from sum y_c^2 and sum y_c m_c, so one pass over the samples serves every row.
std::vector<double> cluster_variances(const SampleSet& samples, const std::vector<size_t>& clusters,
                                      const std::vector<uint32_t>& tags, const RowsOfSamples& row_of,
                                      const FoundAsleep& found_asleep, size_t row_count);

// The profile's total and its rows, each with its share and error, the most samples first.
// inclusive_known: the rows' inclusive samples come from stacks. variance: empty (binomial
// errors), or one per row (cluster_variances) from `clusters` clusters.
void compute_shares(Profile& profile, std::vector<Row> rows, const SampleSet& samples, bool inclusive_known,
                    const std::vector<double>& variance, size_t clusters);

} // namespace mcuprof::core::attribution
