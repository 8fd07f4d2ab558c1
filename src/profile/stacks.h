#pragma once
// Inside the profile library only: the stack rows of a profile and why its stacks were cut.
#include <vector>

#include "aggregation.h"
#include "row_builder.h"
#include "mcuprof/image/source_locator.h"

namespace mcuprof::core::attribution {

// How many stacks were unwound and how many cut short, by reason (the commonest first).
Truncation truncation_of(const SampleSet& samples, const SymbolTable& symbols);

// Stack rows (identical frame chains merged) and, by function, each function's inclusive
// samples: every stack that holds it, once.
void build_stacks(Profile& profile, const SampleSet& samples, const std::vector<Weighted>& items,
                  const SymbolTable& symbols, SourceLocator* locator, const AttributionOptions& options,
                  RowBuilder& rows);

} // namespace mcuprof::core::attribution
