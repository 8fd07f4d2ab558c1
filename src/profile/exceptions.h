#pragma once
// Inside the profile library only: by exception, the rows' names and what each exception
// preempted.
#include "aggregation.h"

namespace mcuprof::core::attribution {

// By exception: the name of each exception's row (Profile::exception_rows), named before the
// stacks, whose roots they are (address_chains). Counts and histogram buckets carry no
// exception: their rows are exception 0's, as aggregate() keys them.
void name_exception_rows(Profile& profile, const SampleSet& samples, const SymbolTable& symbols,
                         const AttributionOptions& options);

// By exception, with stacks: what each exception's samples preempted. The chain runs from the
// sample's PC through the handler's frames to the handler itself (its vector table entry);
// the frame below is the instruction the exception interrupted (the unwinder crosses the
// exception frame there), named by its function.
void find_preempted(Profile& profile, const SampleSet& samples, const FoundAsleep& found_asleep,
                    const SymbolTable& symbols, const AttributionOptions& options);

} // namespace mcuprof::core::attribution
