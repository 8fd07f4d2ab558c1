#pragma once
// Sampling statistics of one row. With N independent samples and a true share p, the
// count is binomial: the share's standard error is sqrt(p(1-p)/N). The Wilson score
// interval keeps the 95 % range inside [0, 100] even for rows with few samples.
namespace mcuprof::core {

struct Share {
    double percent = 0;       // 0..100
    double stderr_pp = 0;     // standard error, percentage points
    double low = 0;           // 95 % Wilson interval, percent
    double high = 0;
};

// exact: the counts are a census (the truth plugin), so there is no sampling error.
Share share_of(double count, double total, bool exact);

// A share of correlated samples, whose variance (of the fraction) was estimated another way
// (the spread between bursts of back-to-back reads) with `degrees` degrees of freedom: the
// standard error is its root, and the interval Wilson's for the effective number of samples
// p(1-p)/variance, widened by Student's t quantile over the normal one, since a variance from
// few bursts is itself uncertain.
Share share_with_variance(double count, double total, double variance, double degrees);

} // namespace mcuprof::core
