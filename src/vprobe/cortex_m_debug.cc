// The bus behind the MEM-AP of CortexMDebug: which addresses the probe simulates (the SCS
// debug registers, DWT, FPB, ITM, the ROM table and CoreSight IDs) and what they answer, the
// FPB comparators and software breakpoints, and everything else passed to the target's memory.
// DHCSR run control is run_control.cc, the DCRSR/DCRDR transfers core_register_transfer.cc.
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

// ---------------------------------------------------------------- the simulated registers

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

uint32_t CortexMDebug::read_pcsr()
{
    // DDI 0403, DWT_PCSR: the address of a recently executed instruction, 0xFFFFFFFF
    // while the core is halted. From the emulator's published PC where there is one (no
    // stop, as on silicon); otherwise each read is a brief halt of the target.
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

std::optional<uint32_t> CortexMDebug::read_simulated(uint32_t a)
{
    using namespace components;
    if (!is_simulated(a))
        return std::nullopt;
    if (in_block(a, dwt) && !options_.dwt)
        return 0;   // no DWT: RAZ, its IDs included
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
    case dwt_pcsr:
        return read_pcsr();
    default:
        break;
    }
    const uint32_t offset = a & 0xFFF;
    if (in_block(a, rom_table))
        return cortex_m_rom_table_word(offset, options_.dwt);
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

void CortexMDebug::write_component(uint32_t a, uint32_t value)
{
    using namespace components;
    if (a >= fp_comp0 && a < fp_comp0 + 4 * fp_comp_.size()) {
        fp_comp_[(a - fp_comp0) / 4] = value & 0xDFFFFFFDu;   // bits 29 and 1 are reserved
        update_breakpoints();
        return;
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
        return;
    }
    if (in_block(a, itm)) {
        const uint32_t offset = a & 0xFFF;
        if (offset == 0xE00)
            itm_ter_ = value;
        else if (offset == 0xE40)
            itm_tpr_ = value & 0xF;
        else if (offset == 0xE80)
            itm_tcr_ = value & 0x00FF0F1Fu;
        return;   // stimulus writes and the lock access register: accepted, no trace
    }
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
    if (in_block(a, dwt) && !options_.dwt)
        return true;   // no DWT: writes ignored
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
    // The comparators and the ITM take the write; the other simulated registers (IDs, ROM table,
    // CPUID, PCSR) are read-only and ignore it.
    write_component(a, value);
    return true;
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
