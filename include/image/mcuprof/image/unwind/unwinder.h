#pragma once
// Call stacks from a halted Cortex-M: the registers and the stack memory of one halt in,
// the chain of callers out. Frames are undone with the ELF's DWARF call-frame information
// (.debug_frame, DWARF 5 section 6.4) or, for code without it, the Arm exception tables
// (.ARM.exidx, ARM IHI 0038); hardware exception frames with EXC_RETURN (ARMv7-M
// Architecture Reference Manual, B1.5.6-B1.5.8; ARMv8-M's encodings, the additional state
// context and the Secure state's boundary, FNC_RETURN: ARMv8-M Architecture Reference Manual,
// DDI 0553, "EXC_RETURN", "Stack frames", "FNC_RETURN"); a function without either table
// by its Thumb prologue, or, as the innermost frame, by LR. Each way is a recoverer of its
// own (src/image/unwind/frame_recovery.h), asked in order.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mcuprof/image/unwind/halted_core.h"
#include "mcuprof/image/unwind/call_stack.h"

namespace mcuprof::core {

class ImageSet;

struct UnwindResult {
    CallStack stack;                         // callers: call sites, innermost first
    UnwindStop stop = UnwindStop::root;
};

class Unwinder {
public:
    // Reads each image's call-frame information (and keeps what it needs: the images may go
    // away); throws core::Error naming the file when it cannot be read. Code without
    // .debug_frame rows unwinds through its .ARM.exidx entry when it has one; an ELF with
    // neither unwinds through leaves and exception frames only (has_frame_info() false).
    explicit Unwinder(const ImageSet& images);
    ~Unwinder();
    Unwinder(const Unwinder&) = delete;
    Unwinder& operator=(const Unwinder&) = delete;

    bool has_frame_info() const;
    // The initial main stack pointer: word 0 of the main image's vector table, the allocated
    // section at the lowest address (ARMv7-M ARM, B1.5.3). Memory ends there on most parts, so
    // stack reads stop at it.
    std::optional<uint32_t> initial_stack_pointer() const;
    UnwindResult unwind(const CoreRegisters& registers, StackMemory& memory, size_t max_depth = 64) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcuprof::core
