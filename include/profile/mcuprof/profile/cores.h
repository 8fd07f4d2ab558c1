#pragma once
// The cores of a multi-core sample set (issue 29): which cores it has, and the samples of one
// of them, so that every core gets a profile of its own beside the whole chip's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mcuprof/profile/profile.h"
#include "mcuprof/profile/samples.h"

namespace mcuprof::core {

// The cores the set names (core_names), else those its samples or counts carry; {0} for a
// single-core set.
std::vector<uint32_t> cores_of(const SampleSet& samples);
// More than one core: the reports add a table per core.
bool is_multicore(const SampleSet& samples);
// What a report calls a core: its name from the source ("core 1"), else "core N".
std::string core_name(const SampleSet& samples, uint32_t core);
// The samples (pcs with their tags, stacks, times, exceptions and variable values) and counts
// of one core, with the set's origin, notes, sampler figures, whether it measures time and the
// variable's names, and the bursts of correlated reads that hold its samples (indices into its
// own pcs); its cores left empty.
SampleSet samples_of_core(const SampleSet& samples, uint32_t core);

// One core's profile as a profile of its own (its rows and total; the whole's origin,
// grouping, warnings and sampler figures), for a diff of that core; nothing when the profile
// has no such core. A profile of one core is its own core 0.
std::optional<Profile> core_profile(const Profile& whole, uint32_t core);

} // namespace mcuprof::core
