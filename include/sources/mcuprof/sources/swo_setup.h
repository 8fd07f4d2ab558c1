#pragma once
// Turns on DWT PC sampling over SWO through OpenOCD's Tcl port, with no firmware change
// (docs/swo.md, "Set-up over OpenOCD"): DEMCR.TRCENA, the ITM (unlocked, ITMENA, SYNCENA,
// DWTENA, a TraceBusID), DWT_CTRL (CYCTAP and POSTPRESET for the rate, CYCCNTENA,
// PCSAMPLENA), then OpenOCD 0.12's TPIU/SWO object (`tpiu create`, `configure -protocol
// uart -traceclk -pin-freq -output`, `enable`) so that OpenOCD serves the stream.
#include <cstdint>
#include <string>

#include "mcuprof/transport/tcl_client.h"

namespace mcuprof::sources {

// Registers (ARMv7-M ARM, ARM DDI 0403: C1.6.5 DEMCR, C1.7 ITM, C1.8.7 DWT_CTRL).
namespace swo_registers {
constexpr uint32_t demcr = 0xE000EDFC;
constexpr uint32_t demcr_trcena = 1u << 24;
constexpr uint32_t itm_lar = 0xE0000FB0;
constexpr uint32_t itm_unlock = 0xC5ACCE55;            // CoreSight lock access key
constexpr uint32_t itm_tcr = 0xE0000E80;
constexpr uint32_t itm_tcr_itmena = 1u << 0;
constexpr uint32_t itm_tcr_syncena = 1u << 2;
constexpr uint32_t itm_tcr_dwtena = 1u << 3;             // TXENA: DWT packets into the ITM stream
constexpr uint32_t itm_trace_bus_id = 1;                 // TraceBusID, bits 22:16; non-zero
constexpr uint32_t dwt_ctrl = 0xE0001000;
constexpr uint32_t dwt_cyccntena = 1u << 0;
constexpr unsigned dwt_postpreset_shift = 1;             // bits 4:1
constexpr unsigned dwt_postinit_shift = 5;               // bits 8:5
constexpr uint32_t dwt_cyctap = 1u << 9;
constexpr unsigned dwt_synctap_shift = 10;               // bits 11:10
constexpr uint32_t dwt_synctap_cyccnt24 = 1;             // a sync packet every 2^24 cycles
constexpr uint32_t dwt_pcsamplena = 1u << 12;
constexpr uint32_t dwt_fields = 0x00001FFF;              // the fields set here, bits 12:0
} // namespace swo_registers

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
