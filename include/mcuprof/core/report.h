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

} // namespace mcuprof::core
