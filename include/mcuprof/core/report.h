#pragma once
// Report formats of a profile, one file each under src/core/report/.
#include <iosfwd>

#include <nlohmann/json_fwd.hpp>

#include "mcuprof/core/profile.h"

namespace mcuprof::core {

// The seed's table (percent, samples, name) with a standard-error column, after a
// header with the sample count and the warnings. max_rows 0: every row.
void write_text(const Profile& profile, std::ostream& out, size_t max_rows = 0);

// The schema is documented in docs/formats.md.
nlohmann::json to_json(const Profile& profile);

class SymbolTable;
struct GmonSummary {
    size_t bins = 0;
    uint32_t rate = 1;
    uint64_t outside = 0;        // samples outside the code sections, not representable
    size_t saturated_bins = 0;   // bins over 65535, stored as 65535
};
// gprof's gmon.out (a time histogram of 2-byte bins over the code sections), which
// arm-none-eabi-gprof reads with the ELF. Works from the samples, not a profile.
GmonSummary write_gmon(const SampleSet& samples, const SymbolTable& symbols, std::ostream& out);

} // namespace mcuprof::core
