#pragma once
// Inside the profile library only: what the reader of a profile should doubt.
#include <vector>

#include "aggregation.h"

namespace mcuprof::core::attribution {

// The profile's warnings, in the order a reader needs them: a stripped ELF, the stacks'
// (already there), the input's notes, the sampler's, lockstep, buckets across functions,
// the sampler's intrusion, and samples outside the image or in no function.
void add_warnings(Profile& profile, const SampleSet& samples, const std::vector<Weighted>& items,
                  const SymbolTable& symbols, const AttributionOptions& options, bool stripped);

} // namespace mcuprof::core::attribution
