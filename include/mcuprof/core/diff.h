#pragma once
// Two profiles side by side: each row's shares, their difference and its z-score, with
// the rows that differ by more than chance flagged.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mcuprof/core/profile.h"

namespace mcuprof::core {

struct DiffRow {
    std::string name;
    double a_samples = 0;
    double b_samples = 0;
    double a_percent = 0;
    double b_percent = 0;
    double delta_pp = 0;   // b - a, percentage points
    double z = 0;          // delta over its standard error under "same share"
    bool flagged = false;  // |z| above the threshold
};

struct ProfileDiff {
    std::string a_origin;
    std::string b_origin;
    double a_total = 0;
    double b_total = 0;
    bool a_exact = false;
    bool b_exact = false;
    double threshold = 3;
    std::vector<DiffRow> rows;   // by the larger of the two shares, descending
};

// The z-score of each row tests "both profiles have the same share p". With both sides
// sampled it is the two-proportion test with the pooled share; when one side is a census
// (truth counts), only the sampled side varies: z = (q - p) / sqrt(p(1-p)/N).
ProfileDiff diff_profiles(const Profile& a, const Profile& b, double threshold = 3.0);

void write_text(const ProfileDiff& diff, std::ostream& out, size_t max_rows = 0);
nlohmann::json to_json(const ProfileDiff& diff);

} // namespace mcuprof::core
