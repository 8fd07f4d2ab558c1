#include "mcuprof/target/stack_pointer_stub.h"

#include <algorithm>

#include "mcuprof/link/special_register_stub.h"
#include "mcuprof/cortex_m.h"

namespace mcuprof::sources {

StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted,
                                    bool general_registers_read, StackPointer which)
{
    using transport::SpecialRegister;
    static constexpr SpecialRegister sysm_of[] = {SpecialRegister::msp, SpecialRegister::psp, SpecialRegister::msp_ns,
                                                  SpecialRegister::psp_ns, SpecialRegister::control_ns};
    const SpecialRegister sysm = sysm_of[size_t(which)];
    transport::HaltedCore core{halted.r[cortex_m::core_reg::sp], halted.r[cortex_m::core_reg::pc], halted.xpsr};
    if (general_registers_read)
        std::copy(halted.r.begin(), halted.r.begin() + core.r.size(), core.r.begin());
    const transport::StubReads read = transport::read_special_registers(gdb, core, {sysm});
    return {read.values[0], read.steps};
}

} // namespace mcuprof::sources
