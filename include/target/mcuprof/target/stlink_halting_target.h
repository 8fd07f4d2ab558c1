#pragma once
// The halting target over an ST-Link's own commands (StlinkHaltingTarget,
// stlink_halting_target.cc; the commands: stlink_link.h). A sample is DHCSR read (someone
// else's halt is left alone, and S_SLEEP is known before the halt wakes the core), the halt
// (DHCSR C_HALT), READALLREGS (every core register in one command), with stacks one block
// read of the window from the new SP, and the resume (DHCSR as found): 4 USB commands, 5 with
// stacks (docs/live.md, "ST-Link commands"). DWT_PCSR sampling reads the running core's PC
// instead, a batch in one READMEM_32BIT_NO_ADDR_INC (READDEBUGREG each on older firmware).
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

struct StlinkTargetOptions {
    transport::Endpoint server;   // ST's stlink-server (or the vprobe's)
    transport::Duration timeout = std::chrono::seconds(3);
    // --stlink usb[:SERIAL]: the probe itself through libusb-1.0 (the serial, empty for the first).
    std::optional<std::string> usb_serial;
    bool pcsr = false;            // DWT_PCSR batches (--mode pcsr): only what the header says
    // --halt-shared: halts go on while other programs have the probe open on the server
    // (by default they pause: StlinkHaltingTarget::halt_and_read).
    bool halt_shared = false;
};

// Connects, opens the probe (shared) and enters SWD; throws transport::Error.
std::unique_ptr<HaltingTarget> make_stlink_halting_target(const StlinkTargetOptions& options);

} // namespace mcuprof::sources
