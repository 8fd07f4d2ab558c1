#pragma once
// The halting target over the GDB remote protocol (RspHaltingTarget, rsp_halting_target.cc):
// interrupt, read the registers (and memory, in one round trip where the server allows), resume.
// Any GDB server: QEMU's gdbstub (every vCPU a thread, all stopped by one interrupt), OpenOCD's
// GDB port (its other cortex_m targets halted through its monitor), probe servers.
#include <chrono>
#include <memory>

#include "mcuprof/link/link.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

struct RspTargetOptions {
    transport::LinkAddress gdb;   // TCP or a serial line
    transport::Duration timeout = std::chrono::seconds(3);
    // The sampler unwinds stacks: the halt stays for more reads, which on OpenOCD keeps its
    // other cores halted between monitor commands, so they are named as not sampled.
    bool stacks = false;
};

// Connects and reads the target description; throws transport::Error.
std::unique_ptr<HaltingTarget> make_rsp_halting_target(const RspTargetOptions& options);

} // namespace mcuprof::sources
