#pragma once
// The stack of a halted target, over any link (HaltingTarget): every core register and one
// window of stack memory in the halt's round trip, more only when a frame reaches beyond
// it; then the host unwinds (core::Unwinder).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mcuprof/image/unwind/unwinder.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

struct StackSamplingOptions {
    std::shared_ptr<const core::Unwinder> unwinder;
    uint32_t window_bytes = 512;     // read near SP with the registers' round trip
    uint32_t extra_reads = 8;        // further windows a deep stack may take, per halt
    size_t max_depth = 64;
};

struct UnwoundHalt {
    core::UnwindResult unwound;
    uint32_t memory_reads = 0;       // reads after the halt's round trip
    uint32_t stack_pointer_reads = 0;  // banked stack pointers read after it (HaltingTarget::read_stack_pointer)
};

class StackReader {
public:
    explicit StackReader(StackSamplingOptions options);
    // Adds to a halt's request what the unwinder needs: all registers, the window where the
    // stack was at the last halt (one round trip per halt instead of two), and the target
    // kept halted for the reads a deep stack needs.
    void add_to(HaltRequest& request) const;
    // A reader with the same options and no history: another core's, whose stack is elsewhere.
    StackReader fresh() const { return StackReader(options_); }
    // Unwinds the halt read with that request (its last memory range is the window, taken
    // out of `state`). Reads more through `target` as frames need; memory the target refuses
    // only ends the chain (marked truncated). Throws transport::Error when the link fails.
    UnwoundHalt unwind(HaltState& state, HaltingTarget& target);

private:
    std::optional<MemoryRange> window_guess() const;

    StackSamplingOptions options_;
    std::optional<uint32_t> last_sp_;  // where the stack was at the last halt
};

} // namespace mcuprof::sources
