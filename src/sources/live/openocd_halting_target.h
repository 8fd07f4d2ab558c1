#pragma once
// The halting target behind OpenOCD's Tcl port (TclHaltingTarget, openocd_halting_target.cc):
// the halt through the core's debug registers (openocd_scripts.h), DWT_PCSR batches or
// OpenOCD's `profile`, the other examined cortex_m targets as cores 1, 2, ..., and OpenOCD's
// background polling held off while mcuprof halts behind its back.
#include <memory>

#include "mcuprof/sources/halting_target.h"
#include "mcuprof/sources/openocd_sampler.h"

namespace mcuprof::sources {

// Connects and finds the current target; throws transport::Error.
std::unique_ptr<HaltingTarget> make_openocd_halting_target(const OpenocdSamplerOptions& options);

} // namespace mcuprof::sources
