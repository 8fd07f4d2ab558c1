#pragma once
// The special-purpose registers of a halted ARMv7-M core (MSP, PSP, PRIMASK, BASEPRI,
// FAULTMASK, CONTROL) through a GDB server that does not describe them (QEMU 7.2's gdbstub:
// its system-register feature is empty): MRS (or MSR) instructions written into the free
// stack memory below SP, single-stepped, then every register and byte they touched put back.
// Two users: the sampler over QEMU directly (sources) and the virtual probe's DCRSR (vprobe).
// docs/stacks.md says what it touches and costs.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace mcuprof::transport {

class RspClient;

// The SYSm numbers of MRS and MSR (ARMv7-M ARM, DDI 0403, B5.1.1), and ARMv8-M's for the
// Non-secure state's registers, which only the Secure state reaches (they read as zero from
// the Non-secure state; ARMv8-M ARM, DDI 0553, "MRS").
enum class SpecialRegister : uint8_t {
    msp = 8, psp = 9, primask = 16, basepri = 17, faultmask = 19, control = 20,
    msp_ns = 0x88, psp_ns = 0x89, control_ns = 0x94,
    msplim = 0x0A, psplim = 0x0B, msplim_ns = 0x8A, psplim_ns = 0x8B,   // ARMv8-M's stack limits
};

// The core at this halt, as read by the caller: where the stub goes (below SP), the PC and
// xPSR it puts back, and r0-r12 where the caller holds them. The stub reads first only the
// registers it changes that are not given here, and puts back the values given, so each
// one given must be the register's value now (read since the core last ran or was written).
struct HaltedCore {
    uint32_t sp = 0;
    uint32_t pc = 0;
    uint32_t xpsr = 0;
    std::array<std::optional<uint32_t>, 13> r{};   // r0-r12
};

struct StubReads {
    // One per register asked, in order; nullopt when it could not be read (the server
    // refused a write, a step did not run the instruction, or MSP/PSP of unprivileged
    // Thread mode, where MRS reads them as 0).
    std::vector<std::optional<uint32_t>> values;
    unsigned steps = 0;   // single steps the target took: its instruction count moved by this much
};

// Reads `which` (at most 6 registers) with one MRS each, into r0, r1, ...: one round trip to
// set up (with a 'p' of each of those r0, r1, ... that `halted` does not give), one step per
// register, one round trip to read and restore. The target is left as
// it was. Throws transport::Error when the link fails, the target ends during a step, or
// the restore is refused.
StubReads read_special_registers(RspClient& gdb, const HaltedCore& halted, const std::vector<SpecialRegister>& which);

// Writes `value` into `which` with MSR from r0, restoring everything else the stub touched
// (writing the active stack pointer moves SP, as on silicon). True when the instruction ran
// on a privileged core (in Thread mode CONTROL is read first: unprivileged, MSR is ignored);
// the single steps taken are added to `steps`.
bool write_special_register(RspClient& gdb, const HaltedCore& halted, SpecialRegister which, uint32_t value,
                            unsigned& steps);

// The security state of a halted ARMv8-M core with the Security Extension, by one TT of the
// halted PC (ARMv8-M ARM, DDI 0553, "TT"; the stub runs where the core runs, below SP): its S
// flag, bit 22, says the address is Secure, and reads as zero from the Non-secure state.
// True for Secure; nullopt when the instruction did not run. Only for such a core: elsewhere
// TT is UNDEFINED. The single steps taken are added to `steps`.
std::optional<bool> read_security_state(RspClient& gdb, const HaltedCore& halted, unsigned& steps);

} // namespace mcuprof::transport
