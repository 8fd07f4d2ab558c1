#pragma once
// The banked stack pointers (MSP, PSP) of a halted ARMv7-M core through a GDB server that
// does not describe them (QEMU 7.2's gdbstub: its system-register feature is empty): one
// MRS instruction, written into free stack memory below SP, single-stepped, then every
// register and byte it touched put back. docs/stacks.md says what it touches and costs.
#include <cstdint>
#include <optional>

#include "mcuprof/core/unwinder.h"
#include "mcuprof/sources/halting_target.h"

namespace mcuprof::transport {
class RspClient;
}

namespace mcuprof::sources {

struct StubRead {
    std::optional<uint32_t> value;
    bool stepped = false;   // the target ran the one instruction (its instruction count moved by 1)
};

// `halted` are the registers read at this halt (r0, sp, pc and xPSR are what the stub
// touches and restores). No value, with the target as it was, when the server refuses a
// write or the step does not run the instruction; throws transport::Error when the link
// fails or the target ends during the step.
StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted, StackPointer which);

} // namespace mcuprof::sources
