#pragma once
// Turns a recorded input of any kind into samples: the kind found from the content, its row
// of sources::input_kinds() reads it.
#include <string>

#include "mcuprof/profile/samples.h"
#include "mcuprof/sources/input_kind.h"

namespace mcuprof::cli {

// Throws sources::Error for an unknown kind and UsageError for a selection that does not
// apply to the kind found.
core::SampleSet load_samples(const std::string& input, sources::InputSelection selection);

} // namespace mcuprof::cli
