#include <doctest/doctest.h>

#include <string>

#include "mcuprof/vprobe/jtag_dp.h"
#include "mcuprof/vprobe/tap_controller.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;
using vprobe_test::TapPins;

namespace {

// TDO over `clocks` clocks with TMS low, as a string of digits, first bit first.
std::string shift_out(TapPins& pins, int clocks, bool tdi = false)
{
    std::string bits;
    for (int i = 0; i < clocks; ++i) {
        pins.write(false, false, tdi);
        bits += pins.tdo() ? '1' : '0';
        pins.write(true, false, tdi);
    }
    pins.write(false, false, tdi);
    return bits;
}

void clock_tms(TapPins& pins, const std::string& tms)
{
    for (char c : tms) {
        pins.write(false, c == '1', false);
        pins.write(true, c == '1', false);
    }
    pins.write(false, false, false);
}

} // namespace

TEST_CASE("tap: every state's two successors (IEEE 1149.1 figure 6-1)")
{
    using S = TapState;
    const struct { S from, on0, on1; } table[] = {
        {S::test_logic_reset, S::run_test_idle, S::test_logic_reset},
        {S::run_test_idle, S::run_test_idle, S::select_dr_scan},
        {S::select_dr_scan, S::capture_dr, S::select_ir_scan},
        {S::capture_dr, S::shift_dr, S::exit1_dr},
        {S::shift_dr, S::shift_dr, S::exit1_dr},
        {S::exit1_dr, S::pause_dr, S::update_dr},
        {S::pause_dr, S::pause_dr, S::exit2_dr},
        {S::exit2_dr, S::shift_dr, S::update_dr},
        {S::update_dr, S::run_test_idle, S::select_dr_scan},
        {S::select_ir_scan, S::capture_ir, S::test_logic_reset},
        {S::capture_ir, S::shift_ir, S::exit1_ir},
        {S::shift_ir, S::shift_ir, S::exit1_ir},
        {S::exit1_ir, S::pause_ir, S::update_ir},
        {S::pause_ir, S::pause_ir, S::exit2_ir},
        {S::exit2_ir, S::shift_ir, S::update_ir},
        {S::update_ir, S::run_test_idle, S::select_dr_scan},
    };
    for (const auto& row : table) {
        CAPTURE(tap_state_name(row.from));
        CHECK(next_tap_state(row.from, false) == row.on0);
        CHECK(next_tap_state(row.from, true) == row.on1);
    }
}

TEST_CASE("tap: the IDCODE comes out LSB first after Test-Logic-Reset")
{
    JtagDp dp;
    TapController tap(dp);
    TapPins pins(tap);
    // From anywhere, five TMS=1 clocks reach Test-Logic-Reset, which selects IDCODE; then
    // 0, 1, 0, 0: Run-Test/Idle, Select-DR-Scan, Capture-DR, Shift-DR.
    clock_tms(pins, "111110100");
    CHECK(tap.state() == TapState::shift_dr);
    CHECK(tap.instruction() == jtag_dp::ir_idcode);
    // 0x4BA00477 by bytes from the low one: 0x77 0x04 0xA0 0x4B, each LSB first; then the
    // ones shifted in behind it.
    CHECK(shift_out(pins, 40, true) == "11101110" "00100000" "00000101" "11010010" "11111111");
}

TEST_CASE("tap: IR capture reads b0001, BYPASS delays TDI by one clock")
{
    JtagDp dp;
    TapController tap(dp);
    TapPins pins(tap);
    clock_tms(pins, "11111" "0" "1100");   // reset, idle, Select-DR, Select-IR, Capture-IR, Shift-IR
    CHECK(tap.state() == TapState::shift_ir);
    // The capture value 0001 leaves first; then the ones we shift in, 4 clocks later.
    std::string out;
    for (int i = 0; i < 8; ++i) {
        const bool last = i == 7;
        pins.write(false, last, true);
        out += pins.tdo() ? '1' : '0';
        pins.write(true, last, true);
    }
    pins.write(false, true, false);
    CHECK(out == "10001111");
    clock_tms(pins, "10");   // Update-IR: the last 4 bits in, 1111 = BYPASS
    CHECK(tap.instruction() == jtag_dp::ir_bypass);
    clock_tms(pins, "100");  // Select-DR, Capture-DR, Shift-DR
    // BYPASS captures 0 and is one bit long: TDI comes out one clock later.
    std::string through;
    const std::string in = "1011001";
    for (char c : in) {
        pins.write(false, false, c == '1');
        through += pins.tdo() ? '1' : '0';
        pins.write(true, false, c == '1');
    }
    pins.write(false, false, false);
    CHECK(through == "0" + in.substr(0, in.size() - 1));
}

TEST_CASE("tap: TRST and five TMS=1 clocks both reset to Test-Logic-Reset")
{
    JtagDp dp;
    TapController tap(dp);
    TapPins pins(tap);
    clock_tms(pins, "0100");
    CHECK(tap.state() == TapState::shift_dr);
    tap.set_trst(true);
    CHECK(tap.state() == TapState::test_logic_reset);
    clock_tms(pins, "0");
    CHECK(tap.state() == TapState::test_logic_reset);   // held while TRST is asserted
    tap.set_trst(false);
    clock_tms(pins, "011");
    CHECK(tap.state() == TapState::select_ir_scan);
    clock_tms(pins, "11111");
    CHECK(tap.state() == TapState::test_logic_reset);
}

TEST_CASE("tap: the device updates on the falling edge in Update-DR, once")
{
    struct Recorder : JtagDevice {
        int updates = 0;
        uint64_t last = 0;
        unsigned ir_length() const override { return 4; }
        uint32_t ir_capture_value() const override { return 1; }
        uint32_t reset_instruction() const override { return 0xE; }
        unsigned dr_length(uint32_t) const override { return 8; }
        uint64_t capture_dr(uint32_t) override { return 0; }
        void update_dr(uint32_t, uint64_t value) override
        {
            ++updates;
            last = value;
        }
    } device;
    TapController tap(device);
    TapPins pins(tap);
    vprobe_test::JtagDriver jtag(pins);
    jtag.reset();
    jtag.dr(0xA5, 8);
    CHECK(device.updates == 1);
    CHECK(device.last == 0xA5);
    // A longer scan leaves the last 8 bits shifted in.
    jtag.dr(0x3C5A, 16);
    CHECK(device.updates == 2);
    CHECK(device.last == 0x3C);
}
