#include "mcuprof/vprobe/tap_controller.h"

namespace mcuprof::vprobe {

TapState next_tap_state(TapState state, bool tms)
{
    // IEEE 1149.1 figure 6-1: each state has one successor for TMS=0 and one for TMS=1.
    using S = TapState;
    switch (state) {
    case S::test_logic_reset: return tms ? S::test_logic_reset : S::run_test_idle;
    case S::run_test_idle: return tms ? S::select_dr_scan : S::run_test_idle;
    case S::select_dr_scan: return tms ? S::select_ir_scan : S::capture_dr;
    case S::capture_dr: return tms ? S::exit1_dr : S::shift_dr;
    case S::shift_dr: return tms ? S::exit1_dr : S::shift_dr;
    case S::exit1_dr: return tms ? S::update_dr : S::pause_dr;
    case S::pause_dr: return tms ? S::exit2_dr : S::pause_dr;
    case S::exit2_dr: return tms ? S::update_dr : S::shift_dr;
    case S::update_dr: return tms ? S::select_dr_scan : S::run_test_idle;
    case S::select_ir_scan: return tms ? S::test_logic_reset : S::capture_ir;
    case S::capture_ir: return tms ? S::exit1_ir : S::shift_ir;
    case S::shift_ir: return tms ? S::exit1_ir : S::shift_ir;
    case S::exit1_ir: return tms ? S::update_ir : S::pause_ir;
    case S::pause_ir: return tms ? S::exit2_ir : S::pause_ir;
    case S::exit2_ir: return tms ? S::update_ir : S::shift_ir;
    case S::update_ir: return tms ? S::select_dr_scan : S::run_test_idle;
    }
    return S::test_logic_reset;
}

const char* tap_state_name(TapState state)
{
    static const char* const names[] = {
        "Test-Logic-Reset", "Run-Test/Idle", "Select-DR-Scan", "Capture-DR", "Shift-DR", "Exit1-DR",
        "Pause-DR",         "Exit2-DR",      "Update-DR",      "Select-IR-Scan", "Capture-IR", "Shift-IR",
        "Exit1-IR",         "Pause-IR",      "Exit2-IR",       "Update-IR",
    };
    return names[static_cast<unsigned>(state)];
}

TapController::TapController(JtagDevice& device) : device_(device)
{
    enter_test_logic_reset();
}

void TapController::enter_test_logic_reset()
{
    state_ = TapState::test_logic_reset;
    instruction_ = device_.reset_instruction();
    device_.test_logic_reset();
}

void TapController::set_trst(bool asserted)
{
    trst_ = asserted;
    if (asserted)
        enter_test_logic_reset();
}

void TapController::set_pins(bool tck, bool tms, bool tdi)
{
    if (tck && !tck_)
        rising_edge(tms, tdi);
    else if (!tck && tck_)
        falling_edge();
    tck_ = tck;
}

void TapController::shift(bool tdi)
{
    // The register is shift_length_ bits long: TDI enters at the top, the low bit leaves
    // towards TDO. A scan longer than the register passes TDI through, delayed by the
    // length, as a real register does (chain detection relies on it).
    shift_register_ = (shift_register_ >> 1) | (uint64_t(tdi) << (shift_length_ - 1));
}

void TapController::rising_edge(bool tms, bool tdi)
{
    ++rising_edges_;
    if (trst_) {
        enter_test_logic_reset();
        return;
    }
    // The action belongs to the state the edge leaves (IEEE 1149.1 6.1.2): Capture loads
    // the shift register, Shift moves it by one bit.
    switch (state_) {
    case TapState::capture_dr:
        shift_length_ = device_.dr_length(instruction_);
        shift_register_ = device_.capture_dr(instruction_);
        break;
    case TapState::capture_ir:
        shift_length_ = device_.ir_length();
        shift_register_ = device_.ir_capture_value();
        break;
    case TapState::shift_dr:
    case TapState::shift_ir:
        shift(tdi);
        break;
    default:
        break;
    }
    state_ = next_tap_state(state_, tms);
    if (state_ == TapState::test_logic_reset)
        enter_test_logic_reset();
}

void TapController::falling_edge()
{
    switch (state_) {
    case TapState::shift_dr:
    case TapState::shift_ir:
        tdo_ = (shift_register_ & 1) != 0;
        break;
    case TapState::update_ir:
        instruction_ = uint32_t(shift_register_ & ((uint64_t(1) << device_.ir_length()) - 1));
        tdo_ = false;
        break;
    case TapState::update_dr:
        device_.update_dr(instruction_, shift_length_ >= 64 ? shift_register_
                                                            : shift_register_ & ((uint64_t(1) << shift_length_) - 1));
        tdo_ = false;
        break;
    default:
        tdo_ = false;
        break;
    }
}

} // namespace mcuprof::vprobe
