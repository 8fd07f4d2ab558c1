#pragma once
// Reader of the ground truth: the QEMU plugin's per-address execution counts, lines of
// "0xADDR COUNT" (firmware-ref/truth/). The result is a census, not a sample.
#include <string>
#include <string_view>

#include "mcuprof/core/samples.h"
#include "mcuprof/sources/text_file.h"

namespace mcuprof::sources {

core::SampleSet parse_truth(std::string_view text, const std::string& path, const ReadProgress& progress = {});
core::SampleSet read_truth(const std::string& path, const ReadProgress& progress = {});

} // namespace mcuprof::sources
