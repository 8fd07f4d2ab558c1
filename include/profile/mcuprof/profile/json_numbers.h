#pragma once
// How every JSON writer of the core prints its numbers: each to its precision, so that a
// reader sees 60.7, not 60.699999999999996, and a count as an integer.
#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace mcuprof::core::json_numbers {

// Shares, standard errors, interval bounds and differences in percent or percentage points,
// to 8 decimal places: far finer than any standard error.
inline double percent(double value)
{
    return std::round(value * 1e8) / 1e8;
}

// A count as an integer when it is whole (every sample and instruction count); a fractional
// one (a histogram bucket split between functions by bytes) to 4 decimal places.
inline nlohmann::json count(double value)
{
    if (value == std::floor(value) && std::fabs(value) < 9e15)
        return static_cast<int64_t>(value);
    return std::round(value * 1e4) / 1e4;
}

// A test statistic (z) to 4 decimal places; JSON has no infinity, so a z that is not finite
// (a share that moved from exactly 0 or 1) is null.
inline nlohmann::json statistic(double value)
{
    if (!std::isfinite(value))
        return nullptr;
    return std::round(value * 1e4) / 1e4;
}

} // namespace mcuprof::core::json_numbers
