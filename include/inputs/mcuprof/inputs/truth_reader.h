#pragma once
// Reader of the ground truth: the QEMU plugin's per-address execution counts, lines of
// "0xADDR COUNT" (firmware-ref/truth/), or "0xADDR COUNT CORE" after "# vcpus N" on a
// multi-core machine. The result is a census, not a sample.
#include <string>
#include <string_view>

#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {

// The line mcuprof appends to a census of a run it cut at an instruction budget (truth --qemu
// of firmware that does not exit): a comment to the plugin's format, it tells the reader the
// census is of the run's first N instructions, so it has no whole run's total.
inline constexpr std::string_view cut_run_marker = "# mcuprof: run cut at the instruction budget";

// The plugin's first line on a machine of several cores; each line then ends with the core
// (the vCPU index) that executed the address.
inline constexpr std::string_view vcpus_marker = "# vcpus ";
inline constexpr uint32_t max_cores = 8;

core::SampleSet parse_truth(std::string_view text, const std::string& path, const ReadProgress& progress = {});
core::SampleSet read_truth(const std::string& path, const ReadProgress& progress = {});

} // namespace mcuprof::sources
