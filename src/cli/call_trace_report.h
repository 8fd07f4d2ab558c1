#pragma once
// report --calls: the call graph of instrumented entry/exit records in an SWO stream.
#include <cstdint>

#include "mcuprof/inputs/swo_reader.h"
#include "profile_output.h"

namespace mcuprof::cli {

// Reads the records on the stimulus port `channel`, names the functions from options.elves
// and writes the graph in options.format, one of core::call_graph_formats().
void report_call_trace(const ReportOptions& options, const sources::SwoOptions& swo, uint32_t channel);

} // namespace mcuprof::cli
