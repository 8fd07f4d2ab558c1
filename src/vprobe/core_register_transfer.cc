// The DCRSR/DCRDR core-register transfer path of CortexMDebug (ARMv7-M ARM, DDI 0403,
// C1.6.3 "Debug Core Register Selector Register" and C1.6.4 "Debug Core Register Data
// Register"; ARMv8-M's banked REGSEL values, DDI 0553): which register a REGSEL names,
// and how each is read from or written to the target. Run control is run_control.cc,
// the bus cortex_m_debug.cc.
#include "mcuprof/vprobe/cortex_m_debug.h"

#include <string>

namespace mcuprof::vprobe {

using namespace cortex_m;

namespace {

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
const char* const special_register_names[] = {"control", "faultmask", "basepri", "primask"};

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

} // namespace

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
        for (const char* name : special_register_names) {
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
        for (const char* name : special_register_names) {
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
        for (const char* name : special_register_names) {
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

} // namespace mcuprof::vprobe
