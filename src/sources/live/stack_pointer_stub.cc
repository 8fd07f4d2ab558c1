#include "mcuprof/sources/stack_pointer_stub.h"

#include "mcuprof/transport/special_register_stub.h"

namespace mcuprof::sources {

StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted, StackPointer which)
{
    const transport::SpecialRegister sysm =
        which == StackPointer::main ? transport::SpecialRegister::msp : transport::SpecialRegister::psp;
    const transport::StubReads read = transport::read_special_registers(gdb, {halted.r[13], halted.r[15], halted.xpsr}, {sysm});
    return {read.values[0], read.steps};
}

} // namespace mcuprof::sources
