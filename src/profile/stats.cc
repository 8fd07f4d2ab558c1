#include "mcuprof/profile/stats.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/students_t.hpp>

namespace mcuprof::core {

namespace {
constexpr double z95 = 1.959963984540054;   // the normal quantile of a two-sided 95 % interval
}

Share share_of(double count, double total, bool exact)
{
    Share s;
    if (total <= 0)
        return s;
    const double p = count / total;
    s.percent = 100.0 * p;
    if (exact) {
        s.low = s.high = s.percent;
        return s;
    }
    s.stderr_pp = 100.0 * std::sqrt(p * (1.0 - p) / total);
    const double z = z95;
    const double z2n = z * z / total;
    const double centre = (p + z2n / 2.0) / (1.0 + z2n);
    const double half = z * std::sqrt(p * (1.0 - p) / total + z2n / (4.0 * total)) / (1.0 + z2n);
    s.low = 100.0 * std::max(0.0, centre - half);
    s.high = 100.0 * std::min(1.0, centre + half);
    return s;
}

Share share_with_variance(double count, double total, double variance, double degrees)
{
    if (total <= 0)
        return {};
    const double p = count / total;
    if (variance <= 0 || p <= 0 || p >= 1 || degrees < 1)
        return share_of(count, total, false);
    const double effective = p * (1.0 - p) / variance;
    const double t = boost::math::quantile(boost::math::complement(boost::math::students_t(degrees), 0.025));
    const double widen = t / z95;
    Share s = share_of(p * effective / (widen * widen), effective / (widen * widen), false);
    s.stderr_pp = 100.0 * std::sqrt(variance);
    return s;
}

} // namespace mcuprof::core
