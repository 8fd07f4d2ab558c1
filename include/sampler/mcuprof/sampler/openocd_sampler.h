#pragma once
// Sampling through OpenOCD's Tcl RPC port (docs/live.md, "Over OpenOCD's Tcl port").
//   halt: one round trip per sample halts the current target, reads pc, lr, sp and xPSR
//         (get_reg) and resumes it, at random intervals like the RSP sampler. With stacks,
//         all core registers and a stack window, the target kept halted for deeper reads.
//   pcsr: DEMCR.TRCENA is set once, then DWT_PCSR is read K times per round trip by a loop
//         inside OpenOCD's Tcl while the core runs; the loop cannot randomize, so a random
//         host-side wait separates the batches. 0xFFFFFFFF (core halted) is dropped and
//         counted; a PCSR that reads 0 (absent) falls back to halt mode with an event.
// The target is left running whatever happens (signal, error, link loss when possible).
// The loop is the shared one (sampling_loop.h); this is the link's adapter.
#include <string>
#include <vector>

#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::sources {

struct OpenocdSamplerOptions {
    transport::Endpoint tcl;
    PacingOptions pacing;       // wall (halt mode) or pcsr
    transport::Duration timeout = std::chrono::seconds(10);
    HaltExtras extras;
    // pcsr: when set, DWT_PCSR is read by OpenOCD's `profile` in chunks of 1024, its
    // histogram written here (PcsrProfileReader) instead of `read_memory` batches.
    std::string pcsr_profile_gmon;
};

class OpenocdSampler : public LiveSampler {
public:
    // Connects and finds the current target; throws transport::Error.
    explicit OpenocdSampler(const OpenocdSamplerOptions& options);
};

} // namespace mcuprof::sources
