#pragma once
// report --calls: the call graph of instrumented entry/exit records (calltrace.c) in an SWO stream.
#include <cstdint>

#include "mcuprof/sources/swo_reader.h"
#include "options.h"

namespace mcuprof::cli {

// Reads the records on the stimulus port `channel`, names the functions from options.elf
// and writes the graph in options.format: text, json, callgrind or dot.
void report_call_trace(const ReportOptions& options, const sources::SwoOptions& swo, uint32_t channel);

} // namespace mcuprof::cli
