#pragma once
// The stack of a halted target over GDB RSP: every core register in one 'g', one window
// of stack memory above SP in one 'm', more only when a frame reaches beyond it; then
// the host unwinds (core::Unwinder). The current task too, when the firmware runs an RTOS.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "mcuprof/core/unwinder.h"
#include "mcuprof/transport/rsp_client.h"

namespace mcuprof::sources {

struct StackSamplingOptions {
    std::shared_ptr<const core::Unwinder> unwinder;
    uint32_t window_bytes = 512;     // read at SP with the registers' round trip behind it
    uint32_t extra_reads = 8;        // further windows a deep stack may take, per halt
    size_t max_depth = 64;
};

struct HaltState {
    core::CoreRegisters registers;
    core::UnwindResult unwound;
    uint32_t memory_reads = 0;       // 'm' requests this halt took
};

class RspStackReader {
public:
    RspStackReader(transport::RspClient& gdb, StackSamplingOptions options);
    // Reads and unwinds the halted target. Throws transport::Error when the link fails;
    // memory the target refuses only ends the chain (marked truncated).
    // `reads` (address, length) go out with the registers, in the same round trip; their
    // bytes land in `memory` (empty where refused).
    HaltState read(const std::vector<std::pair<uint32_t, uint32_t>>& reads, std::vector<std::string>& memory);

private:
    transport::RspClient& gdb_;
    StackSamplingOptions options_;
    std::vector<std::string> names_;   // registers read at each halt
    std::optional<uint32_t> last_sp_;  // where the stack was at the last halt
};

} // namespace mcuprof::sources
