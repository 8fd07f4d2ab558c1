#include "mcuprof/vprobe/cortex_m_debug.h"

#include <cmath>
#include <string>

#include "mcuprof/vprobe/rom_table.h"

namespace mcuprof::vprobe {

using namespace cortex_m;
namespace components = cortex_m_components;

namespace {

bool in_block(uint32_t address, uint32_t block)
{
    return (address & ~0xFFFu) == block;
}

// DWT_CTRL as the Cortex-M4 has it: NUMCOMP 4 in [31:28]; NOTRCPKT, NOEXTTRIG, NOCYCCNT
// and NOPRFCNT [27:24] all 0 (everything present); the enables below are writable.
constexpr uint32_t dwt_ctrl_numcomp = uint32_t(dwt_comparators) << 28;
constexpr uint32_t dwt_ctrl_writable = 0x007F1FFF;

// FP_CTRL as the Cortex-M4 has it: REV 0 (FPBv1), NUM_CODE 6 in [14:12]:[7:4], NUM_LIT 2
// in [11:8]; KEY must be 1 for a write to take effect; ENABLE is bit 0.
constexpr uint32_t fp_ctrl_fixed = (fp_literal_comparators << 8) | (fp_code_comparators << 4);

// FP_COMPn (FPBv1): COMP [28:2] is the word address in the Code region, REPLACE [31:30]
// what happens on a match: 01 breakpoint on the lower halfword, 10 on the upper, 11 on
// both, 00 remap (not a breakpoint). ENABLE is bit 0.
void add_breakpoints(uint32_t comparator, std::set<uint32_t>& into)
{
    if (!(comparator & 1))
        return;
    const uint32_t word = comparator & 0x1FFFFFFCu;
    const uint32_t replace = comparator >> 30;
    if (replace & 1)
        into.insert(word);
    if (replace & 2)
        into.insert(word + 2);
}

std::string core_register_name(uint32_t regsel)
{
    static const char* const names[] = {"r0", "r1", "r2",  "r3",  "r4", "r5", "r6", "r7",  "r8",
                                        "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xpsr"};
    if (regsel <= regsel_xpsr)
        return names[regsel];
    if (regsel == regsel_fpscr)
        return "fpscr";
    return {};
}

// The special-purpose registers packed into REGSEL 20, most significant first.
const char* const special_registers[] = {"control", "faultmask", "basepri", "primask"};

// ARMv8-M's REGSEL values for the banked registers (DDI 0553, DCRSR): the stack pointers and
// limits of either security state, and the special word (as REGSEL 20) of each, 0x22
// Secure, 0x23 Non-secure. What GDB's secext feature calls them, and the current state's
// own register of that name.
struct BankedRegister {
    uint32_t regsel;
    const char* name;
    bool secure;
    const char* current;
};
constexpr BankedRegister banked_registers[] = {
    {0x18, "msp_ns", false, "msp"},       {0x19, "psp_ns", false, "psp"},       {0x1A, "msp_s", true, "msp"},
    {0x1B, "psp_s", true, "psp"},         {0x1C, "msplim_s", true, "msplim"},   {0x1D, "psplim_s", true, "psplim"},
    {0x1E, "msplim_ns", false, "msplim"}, {0x1F, "psplim_ns", false, "psplim"},
};
constexpr uint32_t regsel_special_s = 0x22, regsel_special_ns = 0x23;

// ARMv8-M Mainline cores QEMU has, all with the Security Extension (PARTNO in CPUID[15:4]):
// Cortex-M33 0xD21, M55 0xD22, M85 0xD23, M35P 0xD31.
bool mainline_with_security(uint32_t cpuid_value)
{
    const uint32_t part = (cpuid_value >> 4) & 0xFFFu;
    return (cpuid_value >> 24) == 0x41u && (part == 0xD21u || part == 0xD22u || part == 0xD23u || part == 0xD31u);
}

// Whether the core's DWT has DWT_PCSR: ARMv6-M (CPUID.ARCHITECTURE 0xC, DDI 0419 C1.8.1) and
// ARMv8-M Baseline (the Cortex-M23, PARTNO 0xD20; DDI 0553, "DWT_PCSR": Mainline only) have
// none, and the register reads 0 there; ARMv7-M and ARMv8-M Mainline have it.
bool has_pcsr(uint32_t cpuid_value)
{
    const uint32_t architecture = (cpuid_value >> 16) & 0xFu, part = (cpuid_value >> 4) & 0xFFFu;
    return architecture != 0xCu && part != 0xD20u;
}

} // namespace

CortexMDebug::CortexMDebug(DebugTarget& target, Options options) : target_(target), options_(std::move(options))
{
    halted_ = target_.poll_halted();
}

double CortexMDebug::now() const
{
    if (options_.now)
        return options_.now();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------- run state

bool CortexMDebug::is_simulated(uint32_t a)
{
    using namespace components;
    return in_block(a, itm) || in_block(a, dwt) || in_block(a, fpb) || in_block(a, rom_table) || a == cpuid ||
           a == dfsr || a == dhcsr || a == dcrsr || a == dcrdr || a == demcr || a == dscsr ||
           (a >= 0xE000EFD0 && a <= 0xE000EFFC);
}

// CYCCNT counts while the core runs with CYCCNTENA and TRCENA set (DDI 0403, DWT_CYCCNT:
// it does not count in Debug state). The count is kept as a base plus the running time
// since the base was taken; every change of those conditions takes a new base.
uint32_t CortexMDebug::cyccnt() const
{
    if (!cyccnt_counting_)
        return cyccnt_base_;
    const double ticks = (now() - cyccnt_since_) * options_.core_clock_hz;
    return cyccnt_base_ + uint32_t(uint64_t(std::fmod(std::max(ticks, 0.0), 4294967296.0)));
}

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

// ---------------------------------------------------------------- core registers

std::optional<uint32_t> CortexMDebug::read_core_register(uint32_t regsel)
{
    if (const std::string name = core_register_name(regsel); !name.empty()) {
        if (auto v = target_.read_register(name))
            return uint32_t(*v);
        return std::nullopt;
    }
    if (regsel == regsel_msp || regsel == regsel_psp) {
        // QEMU 7.2's gdbstub has no MSP or PSP (newer ones have them, then they are used):
        // the target reads them by other means (RspTarget: a stub of MRS instructions), with
        // CONTROL from the same halt, so SP is the one CONTROL.SPSEL and the mode select.
        // Where it cannot, both read as the current SP, which is what a debugger shows as SP
        // with CONTROL read as 0 (see docs/vprobe.md).
        const char* name = regsel == regsel_msp ? "msp" : "psp";
        if (auto v = read_special(name))
            return *v;
        if (auto v = target_.read_register("sp"))
            return uint32_t(*v);
        return std::nullopt;
    }
    if (regsel == regsel_special) {
        uint32_t word = 0;
        for (const char* name : special_registers) {
            word <<= 8;
            if (auto v = read_special(name))
                word |= *v & 0xFF;
        }
        return word;
    }
    for (const BankedRegister& banked : banked_registers)
        if (regsel == banked.regsel)
            return has_security_extension() ? read_banked(banked.name, banked.secure, banked.current) : std::nullopt;
    if ((regsel == regsel_special_s || regsel == regsel_special_ns) && has_security_extension()) {
        const bool secure = regsel == regsel_special_s;
        uint32_t word = 0;
        for (const char* name : special_registers) {
            word <<= 8;
            if (auto v = read_banked(std::string(name) + (secure ? "_s" : "_ns"), secure, name))
                word |= *v & 0xFF;
        }
        return word;
    }
    if (regsel >= regsel_s0 && regsel <= regsel_s31) {
        // S(2n) and S(2n+1) are the low and high halves of D(n), as GDB's VFP feature has them.
        const unsigned s = regsel - regsel_s0;
        if (auto d = target_.read_register("d" + std::to_string(s / 2)))
            return uint32_t(*d >> (32 * (s % 2)));
        return std::nullopt;
    }
    return std::nullopt;   // reserved REGSEL values: UNPREDICTABLE, read as 0
}

void CortexMDebug::write_core_register(uint32_t regsel, uint32_t value)
{
    if (const std::string name = core_register_name(regsel); !name.empty()) {
        target_.write_register(name, value);
        return;
    }
    if (regsel == regsel_msp || regsel == regsel_psp) {
        const char* name = regsel == regsel_msp ? "msp" : "psp";
        if (!write_special(name, value) && regsel == regsel_msp && !read_special(name))
            target_.write_register("sp", value);   // the SP that MSP reads as where there is no other
        return;
    }
    if (regsel == regsel_special) {
        // Only the bytes that change are written: on QEMU 7.2 each write is a stub run (an
        // MSR; in Handler mode it ignores CONTROL.SPSEL, as the instruction does).
        unsigned shift = 24;
        for (const char* name : special_registers) {
            const uint32_t byte = (value >> shift) & 0xFF;
            if (read_special(name).value_or(0) != byte)
                write_special(name, byte);
            shift -= 8;
        }
        return;
    }
    if (regsel >= regsel_s0 && regsel <= regsel_s31) {
        const unsigned s = regsel - regsel_s0;
        const std::string d = "d" + std::to_string(s / 2);
        if (auto old = target_.read_register(d)) {
            const unsigned shift = 32 * (s % 2);
            const uint64_t merged = (*old & ~(uint64_t(0xFFFFFFFF) << shift)) | (uint64_t(value) << shift);
            target_.write_register(d, merged);
        }
    }
}

std::optional<uint32_t> CortexMDebug::read_special(const char* name)
{
    if (target_.has_register(name)) {
        if (auto v = target_.read_register(name))
            return uint32_t(*v);
        return std::nullopt;
    }
    return target_.read_special_register(name);
}

std::optional<uint32_t> CortexMDebug::read_banked(const std::string& name, bool secure_bank, const char* current)
{
    if (target_.has_register(name)) {
        if (auto v = target_.read_register(name))
            return uint32_t(*v);
        return std::nullopt;
    }
    const std::optional<bool> secure = security_state();
    if (!secure)
        return std::nullopt;
    if (*secure == secure_bank)
        return read_special(current);
    // The Non-secure bank from the Secure state: MRS's _NS forms. The Secure bank cannot be
    // reached from the Non-secure state (RAZ there).
    return *secure ? target_.read_special_register(name) : std::nullopt;
}

bool CortexMDebug::has_security_extension()
{
    return target_.has_register("msp_s") || mainline_with_security(target_cpuid());
}

// Where the target describes both banks (QEMU 10's secext feature) and its current stack
// pointers (m-system), the current state is the bank they match: MSP, else PSP, MSPLIM,
// PSPLIM when the two banks hold the same value. Otherwise, or when all four agree, the
// target's other means (QEMU 7.2: the TT stub).
std::optional<bool> CortexMDebug::security_state()
{
    if (!halted_)
        return secure_;
    if (secure_current_)
        return secure_;
    secure_.reset();
    for (const char* name : {"msp", "psp", "msplim", "psplim"}) {
        const std::string s = std::string(name) + "_s", ns = std::string(name) + "_ns";
        if (!target_.has_register(name) || !target_.has_register(s) || !target_.has_register(ns))
            continue;
        const auto now = target_.read_register(name), in_s = target_.read_register(s), in_ns = target_.read_register(ns);
        if (now && in_s && in_ns && *in_s != *in_ns) {
            secure_ = *now == *in_s;
            break;
        }
    }
    if (!secure_)
        secure_ = target_.read_security_state();
    secure_current_ = true;
    return secure_;
}

bool CortexMDebug::write_special(const char* name, uint32_t value)
{
    if (target_.has_register(name))
        return target_.write_register(name, value);
    return target_.write_special_register(name, value);
}

void CortexMDebug::transfer_register(uint32_t request)
{
    // DDI 0403, DCRSR: a transfer outside Debug state is UNPREDICTABLE; here it does
    // nothing and S_REGRDY stays 0, so a debugger times out instead of reading garbage.
    if (!refresh_halted()) {
        regrdy_ = false;
        return;
    }
    const uint32_t regsel = request & dcrsr_regsel_mask;
    if (request & dcrsr_regwnr)
        write_core_register(regsel, dcrdr_);
    else
        dcrdr_ = read_core_register(regsel).value_or(0);
    ++register_transfers_;
    regrdy_ = true;   // the transfer completed before the next access can look
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

// ---------------------------------------------------------------- breakpoints

void CortexMDebug::update_breakpoints()
{
    std::set<uint32_t> wanted;
    if (fp_ctrl_ & fp_ctrl_enable)
        for (unsigned i = 0; i < fp_code_comparators; ++i)
            add_breakpoints(fp_comp_[i], wanted);
    for (const auto& [address, instruction] : software_breakpoints_)
        wanted.insert(address);
    if (wanted != breakpoints_) {
        target_.set_breakpoints(wanted);
        breakpoints_ = std::move(wanted);
    }
}

// ---------------------------------------------------------------- the bus

uint32_t CortexMDebug::peek(uint32_t a) const
{
    if (a == dcrdr)
        return dcrdr_;
    if (a == demcr)
        return demcr_;
    if (a == dhcsr)
        return dhcsr_control_;
    if (a == fp_ctrl)
        return fp_ctrl_ | fp_ctrl_fixed;
    if (a >= fp_comp0 && a < fp_comp0 + 4 * fp_comp_.size())
        return fp_comp_[(a - fp_comp0) / 4];
    if (a == dwt_ctrl)
        return dwt_ctrl_ | dwt_ctrl_numcomp;
    if (a >= dwt_comp0 && a < dwt_comp0 + 16 * dwt_comparators) {
        const uint32_t offset = a - dwt_comp0;
        if ((offset & 0xF) < 0xC)
            return dwt_comparators_[(offset / 16) * 3 + (offset & 0xF) / 4];
    }
    return 0;
}

// The target's own CPUID tells the core (an M0 from an M3, an M4, an M33); read once, it never
// changes.
uint32_t CortexMDebug::target_cpuid()
{
    if (!cpuid_) {
        uint32_t value = 0;
        cpuid_ = target_.read_memory(cortex_m::cpuid, 4, value) && value != 0 ? value : cortex_m4_cpuid;
    }
    return *cpuid_;
}

std::optional<uint32_t> CortexMDebug::read_simulated(uint32_t a)
{
    using namespace components;
    if (!is_simulated(a))
        return std::nullopt;
    switch (a) {
    case dhcsr:
        return read_dhcsr();
    case dcrsr:
        return 0;   // write-only
    case dcrdr:
        return dcrdr_;
    case demcr:
        return demcr_;
    case dfsr:
        return dfsr_;
    case cpuid:
        return target_cpuid();
    case dscsr:
        if (!has_security_extension())
            return 0;   // RES0 without the Security Extension
        return (security_state().value_or(false) ? dscsr_cds : 0) | dscsr_control_;
    case dwt_cyccnt:
        return cyccnt();
    case dwt_pcsr: {
        // DDI 0403, DWT_PCSR: the address of a recently executed instruction, 0xFFFFFFFF
        // while the core is halted. From the emulator's published PC where there is one (no
        // stop, as on silicon); otherwise each read is a brief halt of the target.
        if (!options_.pcsr || !has_pcsr(target_cpuid()))
            return 0;
        if (refresh_halted())
            return 0xFFFFFFFFu;
        if (options_.running_pc) {
            target_.let_run();   // a core held for memory accesses moves on, as on silicon
            const std::optional<uint32_t> published = options_.running_pc(options_.core);
            if (!published)
                return 0xFFFFFFFFu;   // no instruction executed yet: nothing recent to give
            ++pc_samples_;
            return *published;
        }
        const std::optional<uint32_t> pc = target_.sample_pc();
        if (!pc) {
            refresh_halted();   // the core stopped by itself meanwhile (a breakpoint)
            return 0xFFFFFFFFu;
        }
        ++pc_samples_;
        return *pc;
    }
    default:
        break;
    }
    const uint32_t offset = a & 0xFFF;
    if (in_block(a, rom_table))
        return cortex_m_rom_table_word(offset);
    if (a >= 0xE000EFD0 && a <= 0xE000EFFC)
        return coresight_id_register(scs_id, offset).value_or(0);
    if (in_block(a, dwt)) {
        if (auto id = coresight_id_register(dwt_id, offset))
            return *id;
        return peek(a);   // CTRL, comparators; the 8-bit profiling counters read 0
    }
    if (in_block(a, fpb)) {
        if (auto id = coresight_id_register(fpb_id, offset))
            return *id;
        if (a == fp_remap)
            return fp_remap_;
        return peek(a);
    }
    if (in_block(a, itm)) {
        if (auto id = coresight_id_register(itm_id, offset))
            return *id;
        if (offset < 0x80)
            return 1;   // stimulus port: FIFOREADY, whatever is written goes nowhere
        if (offset == 0xE00)
            return itm_ter_;
        if (offset == 0xE40)
            return itm_tpr_;
        if (offset == 0xE80)
            return itm_tcr_;
        return 0;
    }
    return 0;
}

bool CortexMDebug::write_simulated(uint32_t a, uint32_t value)
{
    using namespace components;
    if (a == aircr) {
        // The reset requests are the probe's business: the target restarts under control.
        // Anything else (PRIGROUP, ENDIANNESS is read-only) is the target's.
        if ((value & 0xFFFF0000u) != vectkey)
            return true;   // DDI 0403, AIRCR: writes without VECTKEY are ignored
        if (value & (sysresetreq | vectreset)) {
            reset(false);
            return true;
        }
        return false;
    }
    if (!is_simulated(a))
        return false;
    switch (a) {
    case dhcsr:
        write_dhcsr(value);
        return true;
    case dcrsr:
        transfer_register(value);
        return true;
    case dcrdr:
        dcrdr_ = value;
        return true;
    case demcr:
        demcr_ = value & demcr_writable;
        cyccnt_base_ = cyccnt();
        cyccnt_since_ = now();
        cyccnt_counting_ = !halted_ && (dwt_ctrl_ & dwt_cyccntena) && (demcr_ & trcena);
        return true;
    case dfsr:
        dfsr_ &= ~value;
        return true;
    case dscsr:
        // A debugger's change of the security state (CDS with CDSKEY 0) is not made: QEMU's
        // gdbstub cannot switch it. The bank select is kept for reads.
        dscsr_control_ = value & dscsr_sbrsel_bits;
        return true;
    case dwt_ctrl:
        cyccnt_base_ = cyccnt();
        cyccnt_since_ = now();
        dwt_ctrl_ = value & dwt_ctrl_writable;
        cyccnt_counting_ = !halted_ && (dwt_ctrl_ & dwt_cyccntena) && (demcr_ & trcena);
        return true;
    case dwt_cyccnt:
        cyccnt_base_ = value;
        cyccnt_since_ = now();
        return true;
    case fp_ctrl:
        if (value & fp_ctrl_key) {
            fp_ctrl_ = value & fp_ctrl_enable;
            update_breakpoints();
        }
        return true;
    case fp_remap:
        fp_remap_ = value & 0x1FFFFFE0u;
        return true;
    default:
        break;
    }
    if (a >= fp_comp0 && a < fp_comp0 + 4 * fp_comp_.size()) {
        fp_comp_[(a - fp_comp0) / 4] = value & 0xDFFFFFFDu;   // bits 29 and 1 are reserved
        update_breakpoints();
        return true;
    }
    if (a >= dwt_comp0 && a < dwt_comp0 + 16 * dwt_comparators) {
        const uint32_t offset = a - dwt_comp0;
        const unsigned index = (offset / 16) * 3 + (offset & 0xF) / 4;
        if ((offset & 0xF) == 0x4)
            dwt_comparators_[index] = value & 0x1F;          // MASK: 5 bits
        else if ((offset & 0xF) == 0x8)
            dwt_comparators_[index] = value & 0x000FFDAFu;   // FUNCTION: MATCHED and LNK1ENA read-only
        else if ((offset & 0xF) == 0x0)
            dwt_comparators_[index] = value;
        // Watchpoints are stored, not given to the target (see docs/vprobe.md).
        return true;
    }
    if (in_block(a, itm)) {
        const uint32_t offset = a & 0xFFF;
        if (offset == 0xE00)
            itm_ter_ = value;
        else if (offset == 0xE40)
            itm_tpr_ = value & 0xF;
        else if (offset == 0xE80)
            itm_tcr_ = value & 0x00FF0F1Fu;
        return true;   // stimulus writes and the lock access register: accepted, no trace
    }
    return true;   // read-only simulated registers (IDs, ROM table, CPUID, PCSR) ignore writes
}

namespace {

// A debugger's software breakpoint: a halfword write of a Thumb BKPT (0xBExx; OpenOCD
// writes BKPT 0x11) into the Code or SRAM region. BKPT 0xAB is semihosting, not a breakpoint.
bool is_breakpoint_write(uint32_t address, unsigned size, uint32_t value)
{
    return size == 2 && (address & 1) == 0 && address < 0x40000000u && (value & 0xFF00) == 0xBE00 &&
           value != 0xBEAB;
}

} // namespace

bool CortexMDebug::read(uint32_t address, unsigned size, uint32_t& value)
{
    const uint32_t word_address = address & ~3u;
    if (auto word = read_simulated(word_address)) {
        const unsigned shift = 8 * (address & 3);
        value = size == 4 ? *word : (*word >> shift) & ((1u << (8 * size)) - 1);
        return true;
    }
    if (!target_.read_memory(address, size, value))
        return false;
    // Show the BKPT instructions the debugger believes it wrote.
    for (auto it = software_breakpoints_.lower_bound(address > 0 ? address - 1 : 0);
         it != software_breakpoints_.end() && it->first < address + size; ++it)
        for (unsigned byte = 0; byte < 2; ++byte) {
            const uint32_t at = it->first + byte;
            if (at >= address && at < address + size) {
                const unsigned shift = 8 * (at - address);
                value = (value & ~(0xFFu << shift)) | (uint32_t((it->second >> (8 * byte)) & 0xFF) << shift);
            }
        }
    return true;
}

bool CortexMDebug::write(uint32_t address, unsigned size, uint32_t value)
{
    const uint32_t word_address = address & ~3u;
    if (is_simulated(word_address) || word_address == aircr) {
        uint32_t word = value;
        if (size < 4) {
            // A sub-word write to a simulated register updates its lanes of the stored word.
            const unsigned shift = 8 * (address & 3);
            const uint32_t mask = ((1u << (8 * size)) - 1) << shift;
            word = (peek(word_address) & ~mask) | ((value << shift) & mask);
        }
        if (write_simulated(word_address, word))
            return true;
    }
    if (is_breakpoint_write(address, size, value)) {
        software_breakpoints_[address] = uint16_t(value);
        update_breakpoints();
        return true;
    }
    // Anything else written over a software breakpoint (the original instruction put back)
    // removes it.
    bool removed = false;
    for (auto it = software_breakpoints_.lower_bound(address > 0 ? address - 1 : 0);
         it != software_breakpoints_.end() && it->first < address + size;)
        if (it->first + 2 > address) {
            it = software_breakpoints_.erase(it);
            removed = true;
        } else {
            ++it;
        }
    if (removed)
        update_breakpoints();
    return target_.write_memory(address, size, value);
}

} // namespace mcuprof::vprobe
