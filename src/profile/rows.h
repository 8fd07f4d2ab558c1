#pragma once
// Inside the profile library only: the rows of each grouping, made from the weighted addresses.
#include <string>
#include <vector>

#include "aggregation.h"
#include "row_builder.h"
#include "mcuprof/image/source_locator.h"

namespace mcuprof::core::attribution {

// A function's name: the innermost inlined function's as DWARF names it (demangled), or the
// symbol table's label for the function the code belongs to, so that one function has one
// name whether DWARF or the symbol table gives it (a clone's DWARF names the function it was
// cloned from; its symbol says "[clone .constprop.0]").
std::string function_name(const Function* f, const std::vector<SourceFrame>* frames);

// The rows of the grouping, one item at a time; the samples that caught the core asleep go
// to the sleep row. profile: its unattributed samples and distinct addresses are counted
// here. row_of: filled with the row index of each raw sample's key (sample_key), when given.
RowBuilder group_rows(Profile& profile, const std::vector<Weighted>& items, const SampleSet& samples,
                      const SymbolTable& symbols, SourceLocator* locator, const AttributionOptions& options,
                      RowsOfSamples* row_of);

// By stack: one row per distinct chain, root first, a truncated chain under `[truncated]`
// as in the stack formats.
RowBuilder stack_rows(const Profile& profile, const SampleSet& samples);

// By core: one row per core, its samples (or executed instructions), listed even when none.
RowBuilder core_rows(const SampleSet& samples);

} // namespace mcuprof::core::attribution
