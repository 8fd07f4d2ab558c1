#pragma once
// Turns on DWT PC sampling over SWO through OpenOCD's Tcl port, with no firmware change
// (docs/swo.md, "Set-up over OpenOCD"): DEMCR.TRCENA, the ITM (unlocked, ITMENA, SYNCENA,
// DWTENA, a TraceBusID), DWT_CTRL (CYCTAP and POSTPRESET for the rate, CYCCNTENA,
// PCSAMPLENA), then OpenOCD 0.12's TPIU/SWO object (`tpiu create`, `configure -protocol
// uart -traceclk -pin-freq -output`, `enable`) so that OpenOCD serves the stream.
#include <cstdint>
#include <string>

#include "mcuprof/cortex_m.h"
#include "mcuprof/link/tcl_client.h"

namespace mcuprof::sources {

// One DWT PC sampling setting: a sample every (POSTPRESET + 1) toggles of the CYCCNT bit
// CYCTAP chooses (bit 6: 64 cycles, bit 10: 1024 cycles).
struct SwoRate {
    bool cyctap = false;
    uint32_t postpreset = 0;      // 0..15
    uint32_t period_cycles() const { return (cyctap ? 1024u : 64u) * (postpreset + 1); }
    double samples_per_second(double cpu_hz) const { return cpu_hz / period_cycles(); }
};

// The setting with the highest rate not above `rate` samples/s at cpu_hz; the slowest
// (16384 cycles) when even that is faster.
SwoRate choose_swo_rate(double cpu_hz, double rate);
// PC samples a second an SWO line in UART mode carries: 10 bits a byte (start, 8 data,
// stop), 5 bytes a sample.
double swo_line_samples_per_second(double swo_hz);

// The register values the set-up writes, from the values before.
uint32_t itm_tcr_value();
uint32_t dwt_ctrl_value(uint32_t before, const SwoRate& rate);   // PCSAMPLENA included

struct SwoSetupOptions {
    double cpu_hz = 0;            // TRACECLKIN: the core clock on a Cortex-M3/M4
    double swo_hz = 2e6;          // the SWO pin's bit rate
    SwoRate rate;
    std::string output;           // OpenOCD's -output: ":PORT", a file name, or "external"
};

// Written values, read back after the writes.
struct SwoSetupResult {
    std::string tpiu;             // the TPIU/SWO object used
    uint32_t demcr = 0;
    uint32_t itm_tcr = 0;
    uint32_t dwt_ctrl = 0;
    uint32_t dwt_ctrl_before = 0;
};

// Writes the registers, then configures and enables the TPIU. Throws sources::Error (one
// line) when OpenOCD refuses the TPIU/SWO capture, transport::Error when the link fails.
SwoSetupResult set_up_swo(transport::TclClient& tcl, const SwoSetupOptions& options);
// Turns PC sampling off (DWT_CTRL as it was before) and disables the TPIU capture; best
// effort, for the end of a capture.
void tear_down_swo(transport::TclClient& tcl, const SwoSetupResult& setup);

} // namespace mcuprof::sources
