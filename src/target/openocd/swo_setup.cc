#include "mcuprof/target/swo_setup.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "mcuprof/inputs/error.h"
#include "mcuprof/link/error.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {

using namespace cortex_m;   // the registers: mcuprof/cortex_m.h

namespace {

// The CoreSight TPIU of the Cortex-M3/M4, where the ROM table puts it (ARMv7-M ARM C1.2).
constexpr const char* tpiu_base = "0xE0040000";
constexpr const char* our_tpiu = "mcuprof.tpiu";

uint32_t read_word(transport::TclClient& tcl, uint32_t address, const char* name)
{
    // OpenOCD 0.12's read_memory returns a Tcl list of numbers ("0x1000000").
    const std::string answer = tcl.eval("read_memory " + hex32(address) + " 32 1");
    try {
        size_t used = 0;
        const unsigned long value = std::stoul(answer, &used, 0);
        if (answer.find_first_not_of(" \n", used) == std::string::npos && value <= 0xFFFFFFFFul)
            return uint32_t(value);
    } catch (const std::exception&) {
    }
    throw transport::Error(transport::Error::Kind::protocol, tcl.peer(), std::string("read ") + name,
                           "unexpected answer: '" + answer + "'");
}

void write_word(transport::TclClient& tcl, uint32_t address, uint32_t value)
{
    tcl.command({"mww", hex32(address), hex32(value)});
}

std::vector<std::string> words_of(const std::string& text)
{
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;)
        words.push_back(word);
    return words;
}

// The TPIU/SWO object to use: the first one the configuration created (target scripts
// such as stm32f4x.cfg create CHIP.tpiu), else ours on the first DAP's AP 0.
std::string find_or_create_tpiu(transport::TclClient& tcl)
{
    const std::vector<std::string> names = words_of(tcl.command({"tpiu", "names"}));
    if (!names.empty())
        return names.front();
    const std::vector<std::string> daps = words_of(tcl.command({"dap", "names"}));
    if (daps.empty())
        throw Error(tcl.peer(), "dap names", "OpenOCD has no DAP to reach a TPIU through");
    tcl.command({"tpiu", "create", our_tpiu, "-dap", daps.front(), "-ap-num", "0", "-baseaddr", tpiu_base});
    return our_tpiu;
}

// The message OpenOCD gave, without our "peer, script: " prefix.
std::string openocd_message(const transport::Error& e)
{
    const std::string text = e.what();
    const size_t at = text.find("OpenOCD: ");
    std::string message = at == std::string::npos ? text : text.substr(at + 9);
    while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
        message.pop_back();   // OpenOCD ends its messages with a line break: the error is one line
    return message;
}

} // namespace

SwoRate choose_swo_rate(double cpu_hz, double rate)
{
    // The smallest period (fastest rate) not faster than asked. Periods with CYCTAP 0 are
    // 64..1024 in steps of 64, with CYCTAP 1 1024..16384 in steps of 1024.
    SwoRate best{true, 15};
    for (bool cyctap : {true, false})
        for (uint32_t postpreset = 16; postpreset-- > 0;) {
            const SwoRate r{cyctap, postpreset};
            if (r.samples_per_second(cpu_hz) <= rate * (1 + 1e-12) && r.period_cycles() < best.period_cycles())
                best = r;
        }
    return best;
}

double swo_line_samples_per_second(double swo_hz)
{
    return swo_hz / 10 / 5;
}

uint32_t itm_tcr_value()
{
    return (itm_trace_bus_id << 16) | itm_tcr_dwtena | itm_tcr_syncena | itm_tcr_itmena;
}

uint32_t dwt_ctrl_value(uint32_t before, const SwoRate& rate)
{
    // POSTINIT = POSTPRESET: the first period is as long as the others.
    return (before & ~dwt_sampling_fields) | dwt_pcsamplena | (dwt_synctap_cyccnt24 << dwt_synctap_shift) |
           (rate.cyctap ? dwt_cyctap : 0) | (rate.postpreset << dwt_postinit_shift) |
           (rate.postpreset << dwt_postpreset_shift) | dwt_cyccntena;
}

SwoSetupResult set_up_swo(transport::TclClient& tcl, const SwoSetupOptions& options)
{
    SwoSetupResult result;
    // What the registers held, to put back if OpenOCD cannot capture (the ITM's lock is not
    // put back: it only gates writes).
    const uint32_t demcr_before = read_word(tcl, demcr, "DEMCR");
    const uint32_t itm_tcr_before = read_word(tcl, itm_tcr, "ITM_TCR");
    // DEMCR.TRCENA powers the DWT, ITM and TPIU (C1.6.5).
    write_word(tcl, demcr, demcr_before | trcena);
    // The ITM: unlocked (its registers ignore writes while locked), then enabled with DWT
    // packets let through and periodic sync packets.
    write_word(tcl, itm_lar, itm_unlock);
    write_word(tcl, itm_tcr, itm_tcr_value());
    // DWT_CTRL: POSTINIT and POSTPRESET are written while PCSAMPLENA is off (C1.8.7), then
    // sampling is turned on.
    result.dwt_ctrl_before = read_word(tcl, dwt_ctrl, "DWT_CTRL");
    const uint32_t ctrl = dwt_ctrl_value(result.dwt_ctrl_before, options.rate);
    write_word(tcl, dwt_ctrl, ctrl & ~dwt_pcsamplena);
    write_word(tcl, dwt_ctrl, ctrl);
    result.demcr = read_word(tcl, demcr, "DEMCR");
    result.itm_tcr = read_word(tcl, itm_tcr, "ITM_TCR");
    result.dwt_ctrl = read_word(tcl, dwt_ctrl, "DWT_CTRL");

    result.tpiu = find_or_create_tpiu(tcl);
    char traceclk[32], pin[32];
    std::snprintf(traceclk, sizeof traceclk, "%.0f", options.cpu_hz);
    std::snprintf(pin, sizeof pin, "%.0f", options.swo_hz);
    try {
        tcl.command({result.tpiu, "configure", "-protocol", "uart", "-output", options.output, "-traceclk", traceclk,
                     "-pin-freq", pin});
        tcl.command({result.tpiu, "enable"});
    } catch (const transport::Error& e) {
        if (e.kind() != transport::Error::Kind::protocol)
            throw;
        // Sampling off first, then the ITM and DEMCR as they were: the target is left as found.
        write_word(tcl, dwt_ctrl, result.dwt_ctrl_before & ~dwt_pcsamplena);
        write_word(tcl, dwt_ctrl, result.dwt_ctrl_before);
        write_word(tcl, itm_tcr, itm_tcr_before);
        write_word(tcl, demcr, demcr_before);
        throw Error(tcl.peer(), result.tpiu + " enable",
                    "OpenOCD cannot start the SWO capture: " + openocd_message(e) +
                        " (DWT and ITM were set up, read back as DEMCR " + hex32(result.demcr) + " ITM_TCR " +
                        hex32(result.itm_tcr) + " DWT_CTRL " + hex32(result.dwt_ctrl) +
                        ", then restored as they were; the probe and the part must support SWO, see docs/swo.md)");
    }
    return result;
}

void tear_down_swo(transport::TclClient& tcl, const SwoSetupResult& setup)
{
    write_word(tcl, dwt_ctrl, setup.dwt_ctrl_before & ~dwt_pcsamplena);
    tcl.command({setup.tpiu, "disable"});
}

} // namespace mcuprof::sources
