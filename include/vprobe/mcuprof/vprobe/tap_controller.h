#pragma once
// A JTAG TAP controller simulated bit by bit (IEEE 1149.1, the 16-state controller of its
// figure 6-1): TCK edges move it, TMS chooses the path, TDI feeds the instruction and
// data shift registers, TDO shows their low bit. The registers behind the instructions
// belong to a JtagDevice (the JTAG-DP); the TAP only knows their lengths.
#include <cstdint>

namespace mcuprof::vprobe {

enum class TapState : uint8_t {
    test_logic_reset,
    run_test_idle,
    select_dr_scan,
    capture_dr,
    shift_dr,
    exit1_dr,
    pause_dr,
    exit2_dr,
    update_dr,
    select_ir_scan,
    capture_ir,
    shift_ir,
    exit1_ir,
    pause_ir,
    exit2_ir,
    update_ir,
};

// The state after one rising TCK edge with this TMS level.
TapState next_tap_state(TapState state, bool tms);
const char* tap_state_name(TapState state);

// What the instruction register selects. Lengths are at most 64 bits.
class JtagDevice {
public:
    virtual ~JtagDevice() = default;
    virtual unsigned ir_length() const = 0;
    // Loaded into the IR shift register at Capture-IR; IEEE 1149.1 7.1.1 requires 01 in
    // the two low bits (debuggers check them to validate the chain).
    virtual uint32_t ir_capture_value() const = 0;
    // Loaded into the IR at Test-Logic-Reset: IDCODE where the device has one (7.2.1).
    virtual uint32_t reset_instruction() const = 0;
    virtual unsigned dr_length(uint32_t instruction) const = 0;
    // Capture-DR: the value the DR shift register starts from.
    virtual uint64_t capture_dr(uint32_t instruction) = 0;
    // Update-DR: the value shifted in (its last dr_length bits).
    virtual void update_dr(uint32_t instruction, uint64_t value) = 0;
    // Test-Logic-Reset entered.
    virtual void test_logic_reset() {}
};

class TapController {
public:
    explicit TapController(JtagDevice& device);

    // One write of the three pins. The TAP acts on TCK's edges, as IEEE 1149.1 says:
    // a rising edge samples TMS and TDI (capture, shift, state change), a falling edge
    // changes TDO and performs Update-IR/Update-DR.
    void set_pins(bool tck, bool tms, bool tdi);
    // TDO as driven since the last falling edge: the shift register's low bit in
    // Shift-IR/Shift-DR, else 0 (the pin floats; the bitbang protocol needs a digit).
    bool tdo() const { return tdo_; }
    // TRST asserted: the TAP goes to Test-Logic-Reset at once and stays there (6.1.1).
    void set_trst(bool asserted);

    TapState state() const { return state_; }
    uint32_t instruction() const { return instruction_; }
    uint64_t rising_edges() const { return rising_edges_; }

private:
    void rising_edge(bool tms, bool tdi);
    void falling_edge();
    void enter_test_logic_reset();
    void shift(bool tdi);

    JtagDevice& device_;
    TapState state_ = TapState::test_logic_reset;
    uint32_t instruction_ = 0;
    uint64_t shift_register_ = 0;
    unsigned shift_length_ = 1;
    bool tck_ = false;
    bool tdo_ = false;
    bool trst_ = false;
    uint64_t rising_edges_ = 0;
};

} // namespace mcuprof::vprobe
