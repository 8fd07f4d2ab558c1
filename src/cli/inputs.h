#pragma once
// Turns a recorded input of any kind into samples: the kind found from the content, its row
// of sources::input_kinds() reads it.
#include <string>

#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/input_kind.h"

namespace mcuprof::cli {

// Throws sources::Error for an unknown kind and UsageError for a selection that does not
// apply to the kind found.
core::SampleSet load_samples(const std::string& input, sources::InputSelection selection);

// Whether the input is a file that names the ELFs it was recorded from (a recording), so that
// a command can reopen them without --elf. Standard input and streams are not looked at.
// Throws sources::Error when the file cannot be opened.
bool names_its_elves(const std::string& input);

} // namespace mcuprof::cli
