#pragma once
// The banked stack pointers (MSP, PSP) of a halted ARMv7-M core through a GDB server that
// does not describe them (QEMU 7.2's gdbstub): the sampler's side of the stub in
// transport/special_register_stub.h, which says what it touches; docs/stacks.md what it costs.
#include <cstdint>
#include <optional>

#include "mcuprof/image/unwind/unwinder.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::transport {
class RspClient;
}

namespace mcuprof::sources {

struct StubRead {
    std::optional<uint32_t> value;
    unsigned stepped = 0;   // single steps the target took (its instruction count moved by this much)
};

// `halted` are the registers read at this halt: sp, pc and xPSR place the stub and are put
// back; r0-r12 are put back from there too when `general_registers_read` (the halt's read
// had them and the core has not run since), else the ones the stub changes are read first.
// No value, with the target as it was, when the server refuses a write or the step does not
// run the instruction; throws transport::Error when the link fails or the target ends
// during the step.
StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted,
                                    bool general_registers_read, StackPointer which);

} // namespace mcuprof::sources
