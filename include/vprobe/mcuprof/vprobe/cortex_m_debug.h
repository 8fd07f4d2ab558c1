#pragma once
// The bus behind the MEM-AP of a Cortex-M3/M4, with the debug logic simulated on top of a
// DebugTarget (ARMv7-M Architecture Reference Manual, ARM DDI 0403, chapter C1 "ARMv7-M
// Debug"): the ROM table; in the SCS DHCSR, DCRSR, DCRDR, DEMCR, DFSR, CPUID and AIRCR's
// reset requests; the DWT (CTRL with NUMCOMP, CYCCNT, PCSR, comparators); the FPB (its
// code comparators become breakpoints of the target); the ITM's registers. Every other
// address is the target's memory.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "mcuprof/cortex_m.h"
#include "mcuprof/vprobe/debug_target.h"
#include "mcuprof/vprobe/mem_ap.h"

namespace mcuprof::vprobe {

namespace cortex_m {
using namespace mcuprof::cortex_m;   // the register map every layer shares

// What the simulated core has and answers.
constexpr uint32_t demcr_writable = 0x010F07F1;   // DEMCR's bits a write may set
constexpr unsigned dwt_comparators = 4;
constexpr unsigned fp_code_comparators = 6;
constexpr unsigned fp_literal_comparators = 2;
// A Cortex-M4 r0p1 CPUID, answered when the target's own cannot be read.
constexpr uint32_t cortex_m4_cpuid = 0x410FC241;
} // namespace cortex_m

class CortexMDebug : public MemoryBus {
public:
    struct Options {
        // CYCCNT counts at this rate while the target runs, in host time (QEMU has no
        // cycle count a debugger could read): not cycle-accurate.
        double core_clock_hz = 168e6;
        // Seconds on a monotonic clock; tests substitute their own.
        std::function<double()> now;
        // false: a part built without the DWT, which the Cortex-M0, M0+ and M23 leave to the
        // vendor (their TRMs: a DWT, wherever present, has DWT_PCSR; ARMv6-M ARM C1.7.2): the
        // DWT's registers read 0 (DWT_CTRL, so NUMCOMP 0; DWT_PCSR RAZ) and ignore writes, and
        // the ROM table shows no DWT. For debuggers' refusals of PC sampling and their
        // fallbacks to halting. Any core, whatever its CPUID, has the DWT otherwise.
        bool dwt = true;
        // false: halting debug is not allowed on this part (its debug authentication forbids it,
        // as a locked or secured production part's does): DHCSR.C_DEBUGEN is RAZ/WI (ARMv8-M
        // ARM, DDI 0553, DHCSR; ARMv7-M's DBGEN low likewise), so C_HALT never halts the core,
        // while its memory and DWT still answer. For debuggers' faults: a target that will not halt.
        bool halting = true;
        // Where set, DWT_PCSR of a running core is this core's current instruction as the
        // emulator publishes it (the truth plugin's PC file: vprobe --pc-file), read without
        // stopping the target; nullopt before its first instruction. Unset, each read is a
        // brief halt of the target (sample_pc), which bends back-to-back reads (docs/vprobe.md).
        std::function<std::optional<uint32_t>(unsigned core)> running_pc = {};
        // This core's index among the probe's cores (its AP), for running_pc.
        unsigned core = 0;
    };

    explicit CortexMDebug(DebugTarget& target) : CortexMDebug(target, Options{}) {}
    CortexMDebug(DebugTarget& target, Options options);

    bool read(uint32_t address, unsigned size, uint32_t& value) override;
    bool write(uint32_t address, unsigned size, uint32_t value) override;

    // The SRST pin asserted: a system reset, as SYSRESETREQ does.
    void system_reset();

    // What happened, for reports and tests.
    uint64_t pc_samples() const { return pc_samples_; }
    uint64_t register_transfers() const { return register_transfers_; }
    const std::set<uint32_t>& breakpoints() const { return breakpoints_; }
    const std::map<uint32_t, uint16_t>& software_breakpoints() const { return software_breakpoints_; }

private:
    // The word at a simulated address, or nullopt when the address is the target's.
    std::optional<uint32_t> read_simulated(uint32_t word_address);
    // true when the address is simulated (the write was handled).
    bool write_simulated(uint32_t word_address, uint32_t value);
    // A simulated register's stored value without the side effects of a read, for merging
    // sub-word writes.
    uint32_t peek(uint32_t word_address) const;
    static bool is_simulated(uint32_t word_address);
    // DWT_PCSR: the running core's PC (a brief halt, or the emulator's published PC).
    uint32_t read_pcsr();
    // A write of an FPB or DWT comparator or an ITM register; other addresses are left alone.
    void write_component(uint32_t word_address, uint32_t value);

    // DHCSR run control (run_control.cc).
    bool refresh_halted();
    void note_halted();
    void note_running();
    uint32_t read_dhcsr();
    void write_dhcsr(uint32_t value);
    // The DCRSR/DCRDR transfers (core_register_transfer.cc).
    void transfer_register(uint32_t dcrsr);
    std::optional<uint32_t> read_core_register(uint32_t regsel);
    void write_core_register(uint32_t regsel, uint32_t value);
    // MSP, PSP, CONTROL and the masks: by name where the target describes them, else by the
    // target's other means (DebugTarget::read_special_register).
    std::optional<uint32_t> read_special(const char* name);
    // ARMv8-M's banked registers (MSP_NS, PSP_S, MSPLIM_S, CONTROL_NS, ...): by name where the
    // target describes them (QEMU 10's secext feature), else the current state's own register
    // for its bank, or the stub's view of the other bank (the Non-secure one, from Secure).
    std::optional<uint32_t> read_banked(const std::string& name, bool secure_bank, const char* current);
    bool has_security_extension();
    std::optional<bool> security_state();
    bool write_special(const char* name, uint32_t value);
    void reset(bool from_pin);
    uint32_t cyccnt() const;
    uint32_t target_cpuid();
    void update_breakpoints();
    double now() const;

    DebugTarget& target_;
    Options options_;

    bool halted_ = false;
    uint32_t dhcsr_control_ = 0;    // C_DEBUGEN, C_MASKINTS, C_SNAPSTALL as written; C_HALT/C_STEP tracked
    bool step_requested_ = false;
    bool regrdy_ = false;
    bool retired_since_read_ = false;
    bool reset_since_read_ = true;  // the power-on reset (debuggers ignore it at the first read)
    uint32_t dcrdr_ = 0;
    uint32_t demcr_ = 0;
    uint32_t dfsr_ = 0;
    std::optional<uint32_t> cpuid_;
    uint32_t dscsr_control_ = 0;    // SBRSEL, SBRSELEN as written
    // The security state at this halt (kept while the core runs: DSCSR read then gives the
    // last halt's), and whether it was read since the core last ran.
    std::optional<bool> secure_;
    bool secure_current_ = false;

    uint32_t dwt_ctrl_ = 0;
    uint32_t cyccnt_base_ = 0;
    double cyccnt_since_ = 0;       // when cyccnt_base_ was taken
    bool cyccnt_counting_ = false;
    std::array<uint32_t, cortex_m::dwt_comparators * 3> dwt_comparators_{};

    uint32_t fp_ctrl_ = 0;
    uint32_t fp_remap_ = 0;
    std::array<uint32_t, cortex_m::fp_code_comparators + cortex_m::fp_literal_comparators> fp_comp_{};
    std::set<uint32_t> breakpoints_;   // given to the target: FPB comparators and BKPT writes
    // Software breakpoints: BKPT instructions a debugger wrote, by address. QEMU does not halt
    // on a BKPT instruction (it raises an exception in the guest), so the instruction is kept
    // here, shown to reads, and the address becomes a breakpoint of the target.
    std::map<uint32_t, uint16_t> software_breakpoints_;

    uint32_t itm_ter_ = 0;
    uint32_t itm_tpr_ = 0;
    uint32_t itm_tcr_ = 0;

    uint64_t pc_samples_ = 0;
    uint64_t register_transfers_ = 0;
};

} // namespace mcuprof::vprobe
