#include "mcuprof/vprobe/jtag_dp.h"

namespace mcuprof::vprobe {

using namespace jtag_dp;

JtagDp::JtagDp(uint32_t idcode, uint32_t dpidr) : idcode_(idcode), dpidr_(dpidr) {}

unsigned JtagDp::dr_length(uint32_t instruction) const
{
    switch (instruction) {
    case ir_abort:
    case ir_dpacc:
    case ir_apacc:
        return 35;   // ADIv5, DPACC and APACC scan chains: RnW, A[3:2] and 32 data bits
    case ir_idcode:
        return 32;
    default:
        return 1;    // BYPASS, and the reserved instructions that act as it
    }
}

uint64_t JtagDp::capture_dr(uint32_t instruction)
{
    switch (instruction) {
    case ir_idcode:
        return idcode_;
    case ir_dpacc:
    case ir_apacc:
    case ir_abort: {
        // ADIv5, DPACC and APACC scan chains: Capture-DR loads ReadResult[34:3] (the
        // previous read's data) and ACK[2:0]. While the previous AP transfer is still in
        // progress the answer is WAIT and this scan's request will be ignored.
        ++scans_;
        scan_answered_wait_ = busy_left_ > 0 && instruction != ir_abort;
        if (scan_answered_wait_)
            --busy_left_;
        const uint32_t ack = scan_answered_wait_ ? ack_wait : ack_ok_fault;
        return (uint64_t(read_result_) << 3) | ack;
    }
    default:
        return 0;    // BYPASS captures 0 (IEEE 1149.1 10.1.1)
    }
}

void JtagDp::update_dr(uint32_t instruction, uint64_t value)
{
    const bool read = (value & 1) != 0;
    const uint8_t a32 = uint8_t(((value >> 1) & 3) << 2);
    const uint32_t data = uint32_t(value >> 3);
    switch (instruction) {
    case ir_abort:
        if (data & dapabort) {
            // ADIv5, ABORT register: the AP transfer in progress is abandoned; the DP is ready.
            busy_left_ = 0;
            for (AccessPort* port : ports_)
                if (port != nullptr)
                    port->abort();
        }
        return;
    case ir_dpacc:
    case ir_apacc:
        if (scan_answered_wait_) {
            // ADIv5, JTAG-DP WAIT response: a request answered WAIT is not performed;
            // with overrun detection on, the WAIT is recorded in STICKYORUN.
            if (ctrl_stat_ & orundetect)
                ctrl_stat_ |= stickyorun;
            return;
        }
        if (instruction == ir_dpacc) {
            if (read)
                read_result_ = read_dp(a32);
            else
                write_dp(a32, data);
        } else {
            access_ap(read, a32, data);
        }
        return;
    default:
        return;
    }
}

uint32_t JtagDp::read_dp(uint8_t address) const
{
    switch (address) {
    case dp_ctrl_stat:
        return ctrl_stat_;
    case dp_select:
        return select_;
    default:
        // 0x0 is reserved on a DPv0 JTAG-DP; RDBUFF is RAZ on a JTAG-DP (ADIv5, RDBUFF):
        // reading it only serves to collect the previous read's result in the same scan.
        return 0;
    }
}

void JtagDp::write_dp(uint8_t address, uint32_t value)
{
    switch (address) {
    case dp_ctrl_stat:
        write_ctrl_stat(value, true);
        return;
    case dp_select:
        select_ = value;
        return;
    default:
        return;   // RDBUFF and the reserved address ignore writes
    }
}

void JtagDp::write_ctrl_stat(uint32_t value, bool ones_clear_sticky)
{
    // ADIv5, CTRL/STAT: on a JTAG-DP the sticky flags are cleared by writing 1 to them (on
    // an SW-DP they are read-only); the power-up and reset requests are answered at once by
    // their ACK bits (the simulated power domains always power up).
    constexpr uint32_t writable =
        orundetect | trnmode_mask | masklane_mask | trncnt_mask | cdbgrstreq | cdbgpwrupreq | csyspwrupreq;
    const uint32_t sticky_left = ctrl_stat_ & sticky_flags & (ones_clear_sticky ? ~value : ~0u);
    uint32_t next = (value & writable) | sticky_left | (ctrl_stat_ & readok);
    if (next & cdbgrstreq)
        next |= cdbgrstack;
    if (next & cdbgpwrupreq)
        next |= cdbgpwrupack;
    if (next & csyspwrupreq)
        next |= csyspwrupack;
    ctrl_stat_ = next;
}

uint32_t JtagDp::swd_read_dp(uint8_t address) const
{
    switch (address) {
    case dp_dpidr_abort:
        return dpidr_;
    case dp_rdbuff:
        return read_result_;   // ADIv5, SW-DP RDBUFF: the result of the last AP read
    default:
        return read_dp(address);
    }
}

void JtagDp::swd_write_dp(uint8_t address, uint32_t value)
{
    if (address == dp_ctrl_stat) {
        write_ctrl_stat(value, false);
        return;
    }
    if (address != dp_dpidr_abort) {
        write_dp(address, value);
        return;
    }
    // ADIv5, SW-DP ABORT: DAPABORT, and one bit per sticky flag to clear.
    if (value & dapabort) {
        busy_left_ = 0;
        for (AccessPort* port : ports_)
            if (port != nullptr)
                port->abort();
    }
    if (value & stkcmpclr)
        ctrl_stat_ &= ~stickycmp;
    if (value & stkerrclr)
        ctrl_stat_ &= ~stickyerr;
    if (value & orunerrclr)
        ctrl_stat_ &= ~stickyorun;
}

bool JtagDp::swd_access_ap(bool read, uint8_t a32, uint32_t& value)
{
    ++scans_;
    // ADIv5, SW-DP: with a sticky flag set an AP access is answered FAULT and not performed.
    if (!access_ap(read, a32, value))
        return false;
    if (read)
        value = read_result_;
    return true;
}

bool JtagDp::access_ap(bool read, uint8_t a32, uint32_t value)
{
    // ADIv5, JTAG-DP sticky flags: while one is set, AP requests are discarded (the ACK
    // still says OK/FAULT; CTRL/STAT tells what happened).
    if (ctrl_stat_ & sticky_flags)
        return false;
    ++ap_accesses_;
    AccessPort* port = ports_[select_ >> 24];
    // An AP behind an unpowered debug domain cannot answer (ADIv5, CTRL/STAT
    // CDBGPWRUPACK): the transfer fails. An APSEL with no AP reads as zero (its IDR of
    // 0 says "no AP here", which is how debuggers search for APs).
    bool ok = true;
    uint32_t result = 0;
    const uint8_t address = uint8_t((select_ & 0xF0) | a32);
    if (!(ctrl_stat_ & cdbgpwrupack))
        ok = false;
    else if (port != nullptr)
        ok = read ? port->read(address, result) : port->write(address, value);
    if (read) {
        read_result_ = result;
        ctrl_stat_ = ok ? (ctrl_stat_ | readok) : (ctrl_stat_ & ~readok);
    }
    if (!ok)
        ctrl_stat_ |= stickyerr;
    busy_left_ = ap_busy_scans_;
    return ok;
}

} // namespace mcuprof::vprobe
