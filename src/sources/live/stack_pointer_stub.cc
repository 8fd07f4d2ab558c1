#include "mcuprof/sources/stack_pointer_stub.h"

#include <algorithm>

#include "mcuprof/transport/special_register_stub.h"

namespace mcuprof::sources {

StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted,
                                    bool general_registers_read, StackPointer which)
{
    const transport::SpecialRegister sysm =
        which == StackPointer::main ? transport::SpecialRegister::msp : transport::SpecialRegister::psp;
    transport::HaltedCore core{halted.r[13], halted.r[15], halted.xpsr};
    if (general_registers_read)
        std::copy(halted.r.begin(), halted.r.begin() + core.r.size(), core.r.begin());
    const transport::StubReads read = transport::read_special_registers(gdb, core, {sysm});
    return {read.values[0], read.steps};
}

} // namespace mcuprof::sources
