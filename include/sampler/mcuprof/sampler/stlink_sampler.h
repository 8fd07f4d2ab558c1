#pragma once
// The halting sampler over an ST-Link's own commands (docs/live.md, "ST-Link commands"):
// DHCSR, the halt, READALLREGS, the stack window with stacks, the resume; 4 USB commands a
// sample, 5 with stacks; or DWT_PCSR batches (Pacing::pcsr), one USB command a batch. The loop is the shared one (sampling_loop.h); this is the link's adapter.
#include <optional>
#include <string>

#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/sampler/sampling_loop.h"

namespace mcuprof::sources {

struct StlinkSamplerOptions {
    transport::Endpoint server;   // ST's stlink-server, or the vprobe's
    std::optional<std::string> usb_serial;   // --stlink usb[:SERIAL]: the probe on USB instead
    bool halt_shared = false;     // --halt-shared: halts go on beside the server's other clients
    PacingOptions pacing;         // wall, or pcsr
    transport::Duration timeout = std::chrono::seconds(3);
    HaltExtras extras;
};

class StlinkSampler : public LiveSampler {
public:
    // Connects, opens the probe and enters SWD; throws transport::Error.
    explicit StlinkSampler(const StlinkSamplerOptions& options);
};

} // namespace mcuprof::sources
