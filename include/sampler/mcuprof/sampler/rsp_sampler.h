#pragma once
// The halting sampler over the GDB remote protocol: interrupt, read PC, LR, SP and xPSR
// (all registers and stack memory with stacks), resume, at random intervals. Works with any
// GDB server (QEMU's gdbstub, OpenOCD's GDB port, probe servers). On QEMU it can pace by
// instructions instead of wall-clock time: with record/replay, replay_break stops the guest
// at an exact instruction count, so the samples carry none of QEMU's own timing
// (docs/method.md). The loop is the shared one (sampling_loop.h); this is the link's adapter.
#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/link/link.h"

namespace mcuprof::sources {

struct RspSamplerOptions {
    transport::LinkAddress gdb;   // TCP or a serial line
    PacingOptions pacing;       // wall or icount
    transport::Duration timeout = std::chrono::seconds(3);
    HaltExtras extras;
};

class RspHaltingSampler : public LiveSampler {
public:
    // Connects and reads the target description; throws transport::Error.
    explicit RspHaltingSampler(const RspSamplerOptions& options);
};

} // namespace mcuprof::sources
