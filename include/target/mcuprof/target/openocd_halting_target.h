#pragma once
// The halting target behind OpenOCD's Tcl port (TclHaltingTarget, openocd_halting_target.cc):
// the halt through the core's debug registers (openocd_scripts.h), DWT_PCSR batches or
// OpenOCD's `profile`, the other examined cortex_m targets as cores 1, 2, ..., and OpenOCD's
// background polling held off while mcuprof halts behind its back.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

struct TclTargetOptions {
    transport::Endpoint tcl;
    transport::Duration timeout = std::chrono::seconds(10);
    bool pcsr = false;     // DWT_PCSR reads of the running core, else halts
    bool stacks = false;   // the sampler unwinds stacks: each halt reads a stack window too
    // pcsr: when set, DWT_PCSR is read by OpenOCD's `profile` in chunks, its histogram written
    // here and read back (PcsrProfileReader), the chunk lengths random from `profile_seed`.
    std::string pcsr_profile_gmon;
    uint64_t profile_seed = 0;
};

// Connects and finds the current target; throws transport::Error.
std::unique_ptr<HaltingTarget> make_openocd_halting_target(const TclTargetOptions& options);

} // namespace mcuprof::sources
