#pragma once
// An ARM Debug Port (ARM IHI 0031 ADIv5). Over JTAG (chapter 3 "The JTAG Debug Port") it is
// the JtagDevice behind the TAP: a 4-bit IR selects IDCODE, ABORT, DPACC, APACC or BYPASS;
// DPACC and APACC are 35-bit scans carrying a request in and, at the next Capture-DR, the
// 3-bit ACK and the result of the previous read out. Over SWD (chapter 4 "The Serial Wire
// Debug Port") the same registers are reached one transaction at a time, as an SWD host (an
// ST-Link's firmware) makes them. Access ports hang off it by APSEL.
#include <array>
#include <cstdint>

#include "mcuprof/vprobe/tap_controller.h"

namespace mcuprof::vprobe {

namespace jtag_dp {
// Instructions (ADIv5, JTAG-DP instruction register; IR length 4). The others act as BYPASS.
constexpr uint32_t ir_abort = 0x8;
constexpr uint32_t ir_dpacc = 0xA;
constexpr uint32_t ir_apacc = 0xB;
constexpr uint32_t ir_idcode = 0xE;
constexpr uint32_t ir_bypass = 0xF;
// The IR capture value (same section): b0001.
constexpr uint32_t ir_capture = 0x1;
// ACK (ADIv5, DPACC and APACC scan chains): OK/FAULT b010 (faults show in CTRL/STAT),
// WAIT b001.
constexpr uint32_t ack_ok_fault = 0x2;
constexpr uint32_t ack_wait = 0x1;
// Cortex-M3/M4 JTAG-DP IDCODE: version 4, part 0xBA00, designer ARM (JEP106 0x23B in
// bits 11:1; ADIv5, IDCODE register).
constexpr uint32_t cortex_m_idcode = 0x4BA00477;

// DP registers by A[3:2] (ADIv5, DP register map; on a DPv0 JTAG-DP 0x0 is reserved).
constexpr uint8_t dp_ctrl_stat = 0x4;
constexpr uint8_t dp_select = 0x8;
constexpr uint8_t dp_rdbuff = 0xC;

// CTRL/STAT bits (ADIv5, CTRL/STAT).
constexpr uint32_t orundetect = 1u << 0;
constexpr uint32_t stickyorun = 1u << 1;
constexpr uint32_t trnmode_mask = 3u << 2;
constexpr uint32_t stickycmp = 1u << 4;
constexpr uint32_t stickyerr = 1u << 5;
constexpr uint32_t readok = 1u << 6;
constexpr uint32_t masklane_mask = 0xFu << 8;
constexpr uint32_t trncnt_mask = 0xFFFu << 12;
constexpr uint32_t cdbgrstreq = 1u << 26;
constexpr uint32_t cdbgrstack = 1u << 27;
constexpr uint32_t cdbgpwrupreq = 1u << 28;
constexpr uint32_t cdbgpwrupack = 1u << 29;
constexpr uint32_t csyspwrupreq = 1u << 30;
constexpr uint32_t csyspwrupack = 1u << 31;
constexpr uint32_t sticky_flags = stickyorun | stickycmp | stickyerr;

// ABORT (ADIv5, AP ABORT register): on a JTAG-DP only DAPABORT is defined; an SW-DP clears
// its sticky flags through the others (on a JTAG-DP CTRL/STAT does that).
constexpr uint32_t dapabort = 1u << 0;
constexpr uint32_t stkcmpclr = 1u << 1;
constexpr uint32_t stkerrclr = 1u << 2;
constexpr uint32_t wderrclr = 1u << 3;
constexpr uint32_t orunerrclr = 1u << 4;

// SW-DP: DPIDR (read) and ABORT (write) share address 0x0 (ADIv5, SW-DP register map).
constexpr uint8_t dp_dpidr_abort = 0x0;
// Cortex-M3/M4 SW-DP DPIDR: version 2 (DPv1), part 0xBA01, designer ARM (ADIv5, DPIDR).
constexpr uint32_t cortex_m_dpidr = 0x2BA01477;
} // namespace jtag_dp

// An access port's registers, by byte address (SELECT.APBANKSEL << 4 | A[3:2] << 2).
class AccessPort {
public:
    virtual ~AccessPort() = default;
    // false: the transfer failed (a bus error); the DP then sets STICKYERR.
    virtual bool read(uint8_t address, uint32_t& value) = 0;
    virtual bool write(uint8_t address, uint32_t value) = 0;
    // DAPABORT: give up a transfer in progress.
    virtual void abort() {}
};

class JtagDp : public JtagDevice {
public:
    // The JTAG TAP's IDCODE and the SW-DP's DPIDR: the part's (vprobe --chip), by default those
    // of the Cortex-M3 r2 / M4 DP.
    explicit JtagDp(uint32_t idcode = jtag_dp::cortex_m_idcode, uint32_t dpidr = jtag_dp::cortex_m_dpidr);

    void attach(uint8_t apsel, AccessPort& port) { ports_[apsel] = &port; }

    // A slow bus, for tests of a debugger's WAIT handling: after every AP access, this
    // many DPACC/APACC scans are answered WAIT and ignored (ADIv5, JTAG-DP WAIT
    // response); with ORUNDETECT set they set STICKYORUN. 0 (the default): never WAIT.
    void set_ap_busy_scans(unsigned scans) { ap_busy_scans_ = scans; }

    // SWD: one DP register read or write (ADIv5 chapter 4). Reads of 0x0 give DPIDR, of
    // RDBUFF the last AP read's result; writes of 0x0 go to ABORT, and CTRL/STAT's sticky
    // flags are read-only (ABORT's *CLR bits clear them).
    uint32_t swd_read_dp(uint8_t address) const;
    void swd_write_dp(uint8_t address, uint32_t value);
    // SWD: one AP register access through SELECT. false: the FAULT response (a sticky flag
    // was set, the debug domain is off or the transfer failed, which sets STICKYERR).
    bool swd_access_ap(bool read, uint8_t a32, uint32_t& value);

    uint32_t ctrl_stat() const { return ctrl_stat_; }
    uint32_t select() const { return select_; }
    uint64_t ap_accesses() const { return ap_accesses_; }
    uint64_t scans() const { return scans_; }

    // JtagDevice
    unsigned ir_length() const override { return 4; }
    uint32_t ir_capture_value() const override { return jtag_dp::ir_capture; }
    uint32_t reset_instruction() const override { return jtag_dp::ir_idcode; }
    unsigned dr_length(uint32_t instruction) const override;
    uint64_t capture_dr(uint32_t instruction) override;
    void update_dr(uint32_t instruction, uint64_t value) override;

private:
    uint32_t read_dp(uint8_t address) const;
    void write_dp(uint8_t address, uint32_t value);
    // CTRL/STAT as written; over JTAG a 1 written to a sticky flag clears it.
    void write_ctrl_stat(uint32_t value, bool ones_clear_sticky);
    // false: the transfer was dropped (a sticky flag) or failed.
    bool access_ap(bool read, uint8_t a32, uint32_t value);

    uint32_t idcode_;
    uint32_t dpidr_;
    std::array<AccessPort*, 256> ports_{};
    uint32_t ctrl_stat_ = 0;
    uint32_t select_ = 0;
    uint32_t read_result_ = 0;      // captured by the next DPACC/APACC scan
    bool scan_answered_wait_ = false;
    unsigned ap_busy_scans_ = 0;
    unsigned busy_left_ = 0;
    uint64_t ap_accesses_ = 0;
    uint64_t scans_ = 0;
};

} // namespace mcuprof::vprobe
