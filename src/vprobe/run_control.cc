// DHCSR run control of CortexMDebug (ARMv7-M ARM, DDI 0403, C1.6.2 "Debug Halting Control
// and Status Register"): halt, step, resume, the sticky status bits, DFSR's reasons for a
// halt, and the resets (AIRCR, SRST) with their vector catch. The register transfers are
// core_register_transfer.cc, the bus cortex_m_debug.cc.
#include "mcuprof/vprobe/cortex_m_debug.h"

namespace mcuprof::vprobe {

using namespace cortex_m;

void CortexMDebug::note_halted()
{
    cyccnt_base_ = cyccnt();
    cyccnt_since_ = now();
    halted_ = true;
    cyccnt_counting_ = false;
}

void CortexMDebug::note_running()
{
    cyccnt_base_ = cyccnt();
    cyccnt_since_ = now();
    halted_ = false;
    secure_current_ = false;
    retired_since_read_ = true;
    regrdy_ = false;
    cyccnt_counting_ = (dwt_ctrl_ & dwt_cyccntena) && (demcr_ & trcena);
}

// Looks whether the target stopped by itself: only a breakpoint does that (the
// comparators of the FPB are the only halting events given to it).
bool CortexMDebug::refresh_halted()
{
    const bool halted = target_.poll_halted();
    if (halted && !halted_) {
        note_halted();
        dfsr_ |= dfsr_bkpt;
    } else if (!halted && halted_) {
        note_running();
    }
    return halted_;
}

uint32_t CortexMDebug::read_dhcsr()
{
    const bool halted = refresh_halted();
    uint32_t value = dhcsr_control_;
    if (halted && (dhcsr_control_ & c_debugen))
        value |= c_halt;   // set by the core on entry to Debug state
    if (step_requested_)
        value |= c_step;
    if (regrdy_)
        value |= s_regrdy;
    if (halted)
        value |= s_halt;
    // S_RETIRE_ST and S_RESET_ST are sticky: set by the event, cleared by this read.
    if (retired_since_read_ || !halted)
        value |= s_retire_st;
    if (reset_since_read_)
        value |= s_reset_st;
    retired_since_read_ = false;
    reset_since_read_ = false;
    return value;
}

void CortexMDebug::write_dhcsr(uint32_t value)
{
    // DDI 0403, DHCSR: a write without DBGKEY in [31:16] is ignored.
    if ((value & 0xFFFF0000u) != dbgkey)
        return;
    const bool halted = refresh_halted();
    if (!options_.halting)
        value &= ~c_debugen;   // RAZ/WI: the write is one that turns halting debug off
    const bool debugen = value & c_debugen;
    if (!debugen) {
        // Halting debug off: a halted core continues (a debugger that leaves clears
        // C_DEBUGEN and expects the core to run).
        dhcsr_control_ = 0;
        step_requested_ = false;
        if (halted) {
            target_.resume();
            note_running();
        }
        return;
    }
    // C_MASKINTS changes only while halted (DDI 0403, DHCSR).
    const uint32_t maskints = halted ? (value & c_maskints) : (dhcsr_control_ & c_maskints);
    dhcsr_control_ = c_debugen | maskints | (value & c_snapstall);
    step_requested_ = (value & c_step) != 0;
    if (halted) {
        if (value & c_halt)
            return;   // stays halted
        if (step_requested_) {
            // QEMU steps with interrupts masked, as C_MASKINTS asks; a step without it
            // would take a pending interrupt first on silicon (see docs/vprobe.md).
            target_.step();
            retired_since_read_ = true;
            regrdy_ = false;
            dfsr_ |= dfsr_halted;
            // The core is halted again; CYCCNT did not count the one instruction.
            return;
        }
        target_.resume();
        note_running();
        return;
    }
    if (value & c_halt) {
        target_.halt();
        note_halted();
        dfsr_ |= dfsr_halted;
    }
}

// ---------------------------------------------------------------- reset

void CortexMDebug::reset(bool from_pin)
{
    // A local reset leaves the debug logic as it is (DDI 0403, "Debug and reset"): DHCSR's
    // control bits, DEMCR, the FPB and the DWT keep their values. With VC_CORERESET the
    // core halts before the first instruction (a vector catch).
    const bool catch_reset = (dhcsr_control_ & c_debugen) && (demcr_ & vc_corereset);
    target_.reset(catch_reset);
    reset_since_read_ = true;
    secure_current_ = false;
    step_requested_ = false;
    regrdy_ = false;
    if (catch_reset) {
        note_halted();
        dfsr_ |= dfsr_vcatch;
    } else {
        note_running();
    }
    (void)from_pin;
}

void CortexMDebug::system_reset()
{
    reset(true);
}

} // namespace mcuprof::vprobe
